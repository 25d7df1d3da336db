(() => {
  const MAXRUNS = __MAX_RUNS__, MAXTEXT = __MAX_TEXT__, MAXNODES = 20000, ANNOTATE = __ANNOTATE__;
  const W = innerWidth, H = innerHeight;
  const body = document.body;
  if (!body) return { runs: [], text: '', truncated: false };
  // Hit-test every element, including those the page made click-through (pointer-events: none):
  // a person sees them even though the mouse does not. Restored before returning.
  const sheet = new CSSStyleSheet();
  sheet.replaceSync('*, *::before, *::after { pointer-events: auto !important; }');
  const sheets = [...document.adoptedStyleSheets];  // a copy: the property is a live array
  document.adoptedStyleSheets = [...sheets, sheet];
  __SEEN__
  const style = seen.css;
  const alpha = (c) => {
    if (!c || c === 'transparent') return 0;
    const m = c.match(/rgba?\(([^)]*)\)/);
    if (!m) return 1;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean);
    return p.length > 3 ? parseFloat(p[3]) * (p[3].endsWith('%') ? 0.01 : 1) : 1;
  };
  const ROLES = { H1: 'heading', H2: 'heading', H3: 'heading', H4: 'heading', H5: 'heading', H6: 'heading',
    P: 'paragraph', LI: 'listitem', TD: 'cell', TH: 'columnheader', LABEL: 'label', CAPTION: 'caption',
    FIGCAPTION: 'caption', LEGEND: 'legend', DT: 'term', DD: 'definition', BLOCKQUOTE: 'blockquote',
    PRE: 'code', CODE: 'code', BUTTON: 'button', A: 'link', OPTION: 'option', SUMMARY: 'button',
    NAV: 'navigation', HEADER: 'banner', FOOTER: 'contentinfo', DIALOG: 'dialog' };
  const opaqueTags = new Set(['IMG', 'CANVAS', 'VIDEO', 'SVG', 'IFRAME', 'INPUT', 'TEXTAREA', 'SELECT',
    'OBJECT', 'EMBED', 'svg']);
  const paints = (el) => {  // whether el paints something over what lies beneath it
    if (opaqueTags.has(el.tagName)) return seen.opacity(el) > 0.05;
    const s = style(el);
    return (alpha(s.backgroundColor) >= 0.1 || s.backgroundImage !== 'none') && seen.opacity(el) > 0.05;
  };
  // visibility is inherited (a visible child of a hidden parent shows); display: none leaves no boxes.
  const shown = (el) => style(el).visibility === 'visible';
  const fillAlpha = (el) => {
    const s = style(el);
    return alpha(s.webkitTextFillColor || s.color) > 0.05 || seen.textClip(el);
  };
  const meet = (a, b) => ({ left: Math.max(a.left, b.left), top: Math.max(a.top, b.top),
                            right: Math.min(a.right, b.right), bottom: Math.min(a.bottom, b.bottom) });
  const big = (c, r) => c.right - c.left >= Math.min(2, r.width) && c.bottom - c.top >= r.height * 0.5;
  // The body's overflow belongs to the viewport when the root's is visible (CSS overflow
  // propagation): then the body itself clips nothing, whatever its computed style says.
  const rootStyle = style(document.documentElement);
  const bodyPropagates = rootStyle.overflowX === 'visible' && rootStyle.overflowY === 'visible';
  const clips = (el, r) => {  // r cut by hidden overflow (for good) and by scrollers and the viewport
    let kept = { left: r.left, top: r.top, right: r.right, bottom: r.bottom }, view = kept;
    for (let a = el.parentElement; a && a !== document.documentElement; a = a.parentElement) {
      if (a === body && bodyPropagates) continue;
      const s = style(a);
      const x = s.overflowX !== 'visible' || s.clip !== 'auto';
      const y = s.overflowY !== 'visible' || s.clip !== 'auto';
      if (!x && !y) continue;
      const c = a.getBoundingClientRect();
      const box = { left: x ? c.left : -Infinity, right: x ? c.right : Infinity,
                    top: y ? c.top : -Infinity, bottom: y ? c.bottom : Infinity };
      const scrolls = /auto|scroll|overlay/.test(s.overflowX + s.overflowY) && s.clip === 'auto';
      if (!scrolls) kept = meet(kept, box);
      view = meet(view, box);
    }
    view = meet(meet(view, kept), { left: 0, top: 0, right: W, bottom: H });
    return { kept, view };
  };
  const grow = (b, c) => !b ? c : { left: Math.min(b.left, c.left), top: Math.min(b.top, c.top),
                                    right: Math.max(b.right, c.right), bottom: Math.max(b.bottom, c.bottom) };
  const doc = document.scrollingElement || document.documentElement;
  const reachable = (c) => c.right + scrollX > 0 && c.bottom + scrollY > 0 &&
    c.left + scrollX < doc.scrollWidth && c.top + scrollY < doc.scrollHeight;
  const onTop = (el, x, y) => {  // nothing that paints covers el at (x, y)
    for (const e of document.elementsFromPoint(x, y)) {
      if (e === el || el.contains(e)) return true;
      if (paints(e)) return false;
    }
    return false;
  };
  const container = (el) => {
    let c = el;
    while (c && c !== body && ['inline', 'contents'].includes(style(c).display)) c = c.parentElement;
    return c || body;
  };
  const ids = new Map();
  const idOf = (el) => {
    if (!ids.has(el)) ids.set(el, ids.size);
    return ids.get(el);
  };
  const tagOf = (a, attrs) => {  // "li#id.class.other[aria-label value]"
    let b = a.tagName.toLowerCase();
    if (a.id) b += '#' + a.id;
    const cls = typeof a.className === 'string' ? a.className.trim() : '';
    if (cls) b += '.' + cls.split(/\s+/).join('.');
    for (const at of attrs) {
      const v = a.getAttribute(at);
      if (v) b += `[${v}]`;
    }
    return b;
  };
  const describe = (el) => {
    const bits = [];
    for (let a = el, k = 0; a && a !== body && k < 3; a = a.parentElement, k++) {
      bits.push(tagOf(a, ['aria-label', 'title', 'name', 'data-label']));
    }
    const s = bits.join(' < ');
    return s.length > 160 ? s.slice(0, 159) + '\u2026' : s;
  };
  const runs = [], byEl = new Map(), offEl = new Map();
  const annotate = (runs, onTop) => {  // roles, observe indices, and the controls that hold no text
    const st = window.__iwr__ || { els: [] };
    const index = new Map(st.els.map((e, i) => [e, i]));
    const controlOf = (el) => {
      for (let a = el, k = 0; a && a !== body && k < 6; a = a.parentElement, k++) {
        if (index.has(a)) return a;
      }
      return null;
    };
    const stateOf = (el) => {
      const bits = [];
      if (el.type === 'checkbox' || el.type === 'radio') bits.push(el.checked ? 'checked' : 'not checked');
      const pressed = el.getAttribute('aria-pressed') || el.getAttribute('aria-checked');
      if (pressed) bits.push((el.getAttribute('aria-pressed') ? 'pressed=' : 'checked=') + pressed);
      if (el.getAttribute('aria-expanded')) bits.push('expanded=' + el.getAttribute('aria-expanded'));
      if (el.disabled || el.getAttribute('aria-disabled') === 'true') bits.push('disabled');
      return bits.join(', ');
    };
    const claimed = new Set();
    for (const r of runs) {
      r.role = r.owner.getAttribute('role') || ROLES[r.owner.tagName] || 'text';
      const control = controlOf(r.owner);
      if (control) { r.index = index.get(control); r.state = stateOf(control); claimed.add(control); }
    }
    const extras = [];
    for (const [el, i] of index) {
      if (claimed.has(el) || !el.isConnected || !seen.draws(el)) continue;
      const b = el.getBoundingClientRect();
      if (b.width < 1 || b.height < 1 || b.bottom <= 0 || b.right <= 0 || b.top >= H || b.left >= W) continue;
      if (!onTop(el, Math.min(Math.max(b.left + b.width / 2, 0), W - 1),
                     Math.min(Math.max(b.top + b.height / 2, 0), H - 1))) continue;
      let text = '';
      if (el.tagName === 'SELECT') text = el.selectedIndex >= 0 ? el.options[el.selectedIndex].text : '';
      else if (el.tagName === 'INPUT' && ['button', 'submit', 'reset'].includes(el.type)) text = el.value;
      else if (el.tagName === 'TEXTAREA' || (el.tagName === 'INPUT' &&
               !['checkbox', 'radio', 'range', 'color', 'file', 'image'].includes(el.type))) {
        const hidden = el.type === 'password';
        text = el.value ? (hidden ? '•'.repeat(el.value.length) : '"' + el.value + '"')
                        : (el.placeholder ? '(empty; placeholder "' + el.placeholder + '")' : '(empty)');
      }
      const labels = el.labels && el.labels.length ? Array.from(el.labels, (l) => l.innerText).join(' ') : '';
      if (!text) text = el.getAttribute('aria-label') || labels || el.getAttribute('title') ||
                        el.getAttribute('alt') || '';
      extras.push({ text, label: describe(el), tag: el.tagName.toLowerCase(), containers: [], on_screen: true,
                    b: { left: b.left, top: b.top, right: b.right, bottom: b.bottom }, node: el, index: i,
                    role: 'control', state: stateOf(el) });
    }
    if (!extras.length) return;
    const FOLLOWING = Node.DOCUMENT_POSITION_FOLLOWING;
    runs.push(...extras);
    runs.sort((a, b) =>
      a.node === b.node ? 0 : (a.node.compareDocumentPosition(b.node) & FOLLOWING ? -1 : 1));
  };
  let truncated = false, nodes = 0;
  const fields = [];
  const walker = document.createTreeWalker(body, NodeFilter.SHOW_TEXT);
  const range = document.createRange();
  try {
    // a text node of white space alone still parts the words around it ("<b>1</b> {{item}} left")
    let gap = false;
    for (let n = walker.nextNode(); n; n = walker.nextNode()) {
      let raw = n.data.replace(/\s+/g, ' ');
      if (!raw.trim()) { gap = true; continue; }
      if (gap && !raw.startsWith(' ')) raw = ' ' + raw;
      gap = false;
      if (++nodes > MAXNODES) { truncated = true; break; }
      const el = n.parentElement;
      if (!el || ['SCRIPT', 'STYLE', 'NOSCRIPT', 'TEMPLATE', 'TITLE'].includes(el.tagName)) continue;
      if (!shown(el) || seen.opacity(el) <= 0.05 || !fillAlpha(el)) continue;
      range.selectNodeContents(n);
      let box = null, off = null;
      for (const r of Array.from(range.getClientRects()).slice(0, 6)) {
        if (r.width < 1 || r.height < 1) continue;
        const { kept, view } = clips(el, r);
        if (!big(kept, r)) continue;  // clipped away for good
        if (big(view, r)) {
          const cx = (view.left + view.right) / 2, cy = (view.top + view.bottom) / 2;
          if (onTop(el, cx, cy) && seen.legible(el, cx, cy, r.height)) box = grow(box, view);
        } else if (reachable(kept)) {
          off = grow(off, kept);  // on the page, but scrolled out of view
        }
      }
      if (!box && !off) continue;
      const owner = container(el), onScreen = box !== null;
      const key = onScreen ? byEl : offEl;
      let run = key.get(owner);
      if (!run) {
        if (runs.length >= MAXRUNS) { truncated = true; break; }
        const path = [];
        for (let a = owner, k = 0; a && k < 5; a = a.parentElement, k++) path.push(idOf(a));
        run = { text: '', label: describe(owner), tag: owner.tagName.toLowerCase(), containers: path,
                b: box || off, on_screen: onScreen, node: n, owner };
        key.set(owner, run); runs.push(run);
      } else {
        run.b = grow(run.b, box || off);
      }
      run.text += raw;
      if (el !== owner) {  // an inline part with a look of its own (a badge, a pill, a struck word)
        if (!run.parts) run.parts = new Map();
        const part = run.parts.get(el);
        if (part) part.text += raw;
        else if (run.parts.size < 8) run.parts.set(el, { text: raw });
      }
    }
    if (ANNOTATE) annotate(runs, onTop);
    // Form fields a person sees, with what they show: typed text is no text node, and an empty box
    // shows only its placeholder.
    const SKIP = ['hidden', 'checkbox', 'radio', 'range', 'color', 'file', 'image', 'button', 'submit',
                  'reset'];
    for (const el of Array.from(document.querySelectorAll('input,textarea,select')).slice(0, 200)) {
      if (fields.length >= 40) break;
      if (el.tagName === 'INPUT' && SKIP.includes(el.type)) continue;
      if (!shown(el) || seen.opacity(el) <= 0.05 || !seen.draws(el)) continue;
      const b = el.getBoundingClientRect();
      if (b.width < 4 || b.height < 4 || b.bottom <= 0 || b.right <= 0 || b.top >= H || b.left >= W) continue;
      const { kept } = clips(el, b);
      if (!big(kept, b)) continue;
      if (!onTop(el, Math.min(Math.max(b.left + b.width / 2, 0), W - 1),
                     Math.min(Math.max(b.top + b.height / 2, 0), H - 1))) continue;
      const by = (el.getAttribute('aria-labelledby') || '').split(/\s+/).filter(Boolean).slice(0, 4)
        .map((id) => { const r = document.getElementById(id); return r ? r.textContent : ''; }).join(' ');
      const labels = el.labels ? Array.from(el.labels, (l) => l.textContent).join(' ') : '';
      const name = [by, el.getAttribute('aria-label'), labels, el.getAttribute('title'),
                    el.getAttribute('placeholder'), el.getAttribute('name'), el.id]
        .map((t) => String(t || '').replace(/\s+/g, ' ').trim()).filter(Boolean).join(' | ');
      let value = '';
      if (el.tagName === 'SELECT') value = el.selectedIndex >= 0 ? el.options[el.selectedIndex].text : '';
      else value = el.type === 'password' ? '\u2022'.repeat(el.value.length) : el.value;
      fields.push({ tag: el.tagName.toLowerCase(), type: el.tagName === 'INPUT' ? el.type : '',
                    name: name.slice(0, 200), value: String(value).slice(0, 500),
                    placeholder: String(el.getAttribute('placeholder') || '').slice(0, 200),
                    box: { x: b.left, y: b.top, width: b.width, height: b.height } });
    }
  } finally {
    document.adoptedStyleSheets = sheets;
  }
  // How each block looks, for claims about looks ("turns green", "is struck through", "is
  // outlined", "is ticked"): its ink, the background it sits on, line-through (drawn by an
  // ancestor's text-decoration too), the frames (border, outline, shadow, own background) of the
  // block and its three nearest ancestors, and the on/off state of a toggle it belongs to.
  const rgb = (c) => {
    if (alpha(c) < 0.35) return null;
    const m = c.match(/rgba?\(([^)]*)\)/);
    if (!m) return null;
    const parts = m[1].split(/[\s,\/]+/).filter(Boolean).slice(0, 3);
    return parts.map((v) => Math.round(parseFloat(v))).join(',');
  };
  const firstColour = (shadow) => {
    const m = shadow && shadow !== 'none' ? shadow.match(/rgba?\([^)]*\)/) : null;
    return m ? rgb(m[0]) : null;
  };
  // a box's fill: its colour, else the first stop of a gradient drawn over a transparent colour
  const fillOf = (t) => rgb(t.backgroundColor) || firstColour(t.backgroundImage);
  const toggleOf = (el) => {
    for (let a = el, k = 0; a && a !== body && k < 4; a = a.parentElement, k++) {
      if (a.tagName === 'INPUT' && (a.type === 'checkbox' || a.type === 'radio')) return a.checked;
      for (const at of ['aria-checked', 'aria-pressed', 'aria-selected']) {
        const v = a.getAttribute(at);
        if (v === 'true' || v === 'false') return v === 'true';
      }
      // the block, its label or a short row around it (a setting's name beside its switch) holds
      // exactly one toggle: its state
      if (k === 0 || a.tagName === 'LABEL' || (k <= 2 && (a.textContent || '').length <= 160)) {
        const own = a.querySelectorAll(
          'input[type=checkbox],input[type=radio],[aria-checked],[aria-pressed],[role=switch]');
        if (own.length === 1) {
          const t = own[0];
          if (t.tagName === 'INPUT') return t.checked;
          const v = t.getAttribute('aria-checked') || t.getAttribute('aria-pressed');
          if (v === 'true' || v === 'false') return v === 'true';
        }
      }
    }
    return null;
  };
  const frameOf = (t) => {
    const border = ['Top', 'Right', 'Bottom', 'Left']
      .filter((d) => parseFloat(t['border' + d + 'Width']) > 0 && t['border' + d + 'Style'] !== 'none')
      .map((d) => rgb(t['border' + d + 'Color'])).find((c) => c) || null;
    const outline = t.outlineStyle !== 'none' && parseFloat(t.outlineWidth) > 0 ? rgb(t.outlineColor) : null;
    return { border, outline, shadow: firstColour(t.boxShadow), bg: fillOf(t),
             width: parseFloat(t.borderTopWidth) || 0 };
  };
  const marksOf = (el) => {  // small textless shapes beside the text: a switch, a tick box, a dot
    let row = el;
    for (let a = el.parentElement, k = 1; a && a !== body && k <= 2; a = a.parentElement, k++) {
      if ((a.textContent || '').length > 160) break;
      row = a;
    }
    const out = [];
    const all = row.querySelectorAll('*');
    for (let i = 0; i < all.length && i < 40 && out.length < 2; i++) {
      const m = all[i];
      if ((m.textContent || '').trim() || m.tagName === 'IMG' || m.tagName === 'svg') continue;
      const b = m.getBoundingClientRect();
      if (b.width < 6 || b.height < 6 || b.width > 80 || b.height > 80) continue;
      const f = frameOf(style(m));
      if (f.border || f.outline || f.shadow || f.bg) out.push(f);
    }
    return out;
  };
  // italic as the text itself is drawn: the element around its first words (<b><i>x</i></b>)
  const italicOf = (el) => {
    const walk = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    let n, holder = el;
    while ((n = walk.nextNode())) if (n.data.trim()) { holder = n.parentElement || el; break; }
    const f = style(holder).fontStyle;
    return f === 'italic' || f.startsWith('oblique');
  };
  const lookOf = (el) => {
    if (!el || el.nodeType !== 1) return null;
    const s = style(el);
    let bg = null, strike = false;
    const frames = [];
    for (let a = el, k = 0; a && a !== document.documentElement; a = a.parentElement, k++) {
      const t = style(a);
      if (!bg) bg = fillOf(t);
      if (k < 6 && (t.textDecorationLine || '').includes('line-through')) strike = true;
      if (k < 4) frames.push(frameOf(t));
    }
    if (!bg) bg = rgb(style(document.documentElement).backgroundColor) || '255,255,255';
    return { color: rgb(s.webkitTextFillColor || s.color), bg, strike, frames, on: toggleOf(el),
             size: parseFloat(s.fontSize) || 0, weight: parseInt(s.fontWeight, 10) || 400,
             italic: italicOf(el), marks: marksOf(el) };
  };
  const partsOf = (r) => {
    if (!r.parts) return [];
    const out = [];
    for (const [el, part] of r.parts) {
      const text = part.text.replace(/\s+/g, ' ').trim();
      if (!text) continue;
      const look = lookOf(el);
      look.frames = look.frames.slice(0, 1);
      look.marks = [];
      const label = tagOf(el, ['aria-label', 'title']);
      out.push({ text: text.slice(0, 200), label: label.slice(0, 120), look });
    }
    return out;
  };
  let total = 0;
  const out = [];
  for (const r of runs) {
    let text = r.text.replace(/\s+/g, ' ').trim();
    if (!text && r.index === undefined) continue;
    if (total + text.length > MAXTEXT) {
      truncated = true;
      text = text.slice(0, Math.max(0, MAXTEXT - total));
      if (!text) break;
    }
    total += text.length + 1;
    const run = { text, label: r.label, tag: r.tag, containers: r.containers, on_screen: r.on_screen,
               box: { x: r.b.left, y: r.b.top, width: r.b.right - r.b.left, height: r.b.bottom - r.b.top } };
    if (ANNOTATE) Object.assign(run, { role: r.role, index: r.index, state: r.state || null });
    run.look = lookOf(r.owner || r.node);
    if (run.look) {
      const holder = r.node && r.node.nodeType === 3 ? r.node.parentElement : null;
      if (holder && run.look.on === null) run.look.on = toggleOf(holder);
      run.look.parts = partsOf(r);
    }
    out.push(run);
  }
  const page = rgb(style(body).backgroundColor) || rgb(style(document.documentElement).backgroundColor) ||
    '255,255,255';
  return { runs: out, text: out.filter((r) => r.on_screen).map((r) => r.text).join('\n'), truncated,
           background: page, fields, height: H };
})()
