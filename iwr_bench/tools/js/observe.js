(() => {
  const MAX = __MAX__, MAXTEXT = __MAX_TEXT__, MAXSTR = __MAX_STRING__;
  const st = window.__iwr__ || (window.__iwr__ = { els: [], gen: 0 });
  const cut = (v, n = MAXSTR) => {
    if (v === null || v === undefined) return null;
    const t = String(v);
    return t.length > n ? t.slice(0, n - 1) + '\u2026' : t;
  };
  const W = innerWidth, H = innerHeight;
  const SEL = 'a[href],button,input:not([type=hidden]),select,textarea,summary,label[for],' +
    '[role=button],[role=link],[role=checkbox],[role=radio],[role=tab],[role=menuitem],[role=option],' +
    '[role=switch],[role=combobox],[role=textbox],[role=slider],[onclick],[contenteditable=""],' +
    '[contenteditable=true],[tabindex]:not([tabindex="-1"])';
  const implicit = { a: 'link', button: 'button', select: 'combobox', textarea: 'textbox',
    summary: 'button' };
  const inputRole = { checkbox: 'checkbox', radio: 'radio', range: 'slider', button: 'button',
    submit: 'button', reset: 'button' };
  const squash = (t) => String(t || '').replace(/\s+/g, ' ').trim();
  const accName = (el, labels) => {  // what a screen reader announces, roughly in its order
    const ids = (el.getAttribute('aria-labelledby') || '').split(/\s+/).filter(Boolean).slice(0, 4);
    const by = squash(ids.map((id) => {
      const ref = document.getElementById(id);
      return ref ? ref.textContent.slice(0, 200) : '';
    }).join(' '));
    if (by) return by;
    const aria = squash(el.getAttribute('aria-label'));
    if (aria) return aria;
    const label = squash(labels.join(' '));
    if (label) return label;
    const img = el.tagName === 'IMG' ? el : el.querySelector('img[alt]:not([alt=""])');
    if (img && squash(img.getAttribute('alt'))) return squash(img.getAttribute('alt'));
    const svgTitle = el.querySelector('svg title');
    if (svgTitle && squash(svgTitle.textContent)) return squash(svgTitle.textContent);
    return squash(el.getAttribute('title')) || squash(el.getAttribute('placeholder')) || null;
  };
  // What an icon-font or sprite icon depicts, from its class or reference ("bi bi-eye-slash",
  // "fa-solid fa-trash-can", <use href="#icon-gear">): the words a person would call it by.
  const ICON = new RegExp('^(?:' + ['bi', 'fa', 'fas', 'far', 'fab', 'glyphicon', 'mdi', 'ri', 'ti',
    'bx', 'bxs', 'bxl', 'icon', 'la', 'las', 'lni', 'feather', 'lucide', 'ion', 'octicon', 'gg', 'uil',
    'ph', 'tabler', 'codicon'].join('|') + ')-(.+)$');
  const MOD = new RegExp('^(?:' + ['fill', 'line', 'outline', 'outlined', 'solid', 'regular', 'light',
    'thin', 'duotone', 'sharp', 'o', 'alt', 'lg', 'sm', 'xs', 'xl', '\\d+x', 'fw', 'spin', 'pulse',
    'inverse', 'border', 'pull', 'rotate', 'flip', 'stack', 'beat', 'fade', 'bounce', 'shake', 'inline',
    'icon'].join('|') + ')$');
  const iconWords = (el) => {
    const words = [];
    const add = (name) => {
      const parts = String(name).toLowerCase().split(/[-_]+/).filter(Boolean);
      if (!parts.length || MOD.test(parts[0])) return;
      for (const w of parts) if (!MOD.test(w) && !/^\d+$/.test(w)) words.push(w);
    };
    const nodes = [el, ...Array.from(el.querySelectorAll('i,span,svg,use,em,b')).slice(0, 6)];
    for (const n of nodes) {
      for (const c of String(n.getAttribute('class') || '').split(/\s+/)) {
        const m = ICON.exec(c);
        if (m) add(m[1]);
      }
      for (const a of ['data-lucide', 'data-feather', 'data-icon']) {
        if (n.getAttribute(a)) add(n.getAttribute(a));
      }
      const use = n.tagName.toLowerCase() === 'use';
      const ref = use ? n.getAttribute('href') || n.getAttribute('xlink:href') || '' : '';
      if (ref.includes('#')) add(ref.split('#')[1].replace(/^(icon|ico|i)[-_]/, ''));
    }
    return words.length ? Array.from(new Set(words)).slice(0, 8).join(' ') : null;
  };
  const all = document.body ? document.body.getElementsByTagName('*') : [];
  const out = [], els = [];
  let truncated = false;
  const limitScan = Math.min(all.length, 60000);
  __SEEN__
  // What lies behind a control is hit-tested, click-through layers included (restored below).
  const sheet = new CSSStyleSheet();
  sheet.replaceSync('*, *::before, *::after { pointer-events: auto !important; }');
  const sheets = [...document.adoptedStyleSheets];
  document.adoptedStyleSheets = [...sheets, sheet];
  try {
  for (let i = 0; i < limitScan; i++) {
    const el = all[i];
    let hit = el.matches(SEL);
    if (!hit) {
      if (el.childElementCount > 3) continue;
      const cs = getComputedStyle(el);
      if (cs.cursor !== 'pointer') continue;
      const p = el.parentElement;
      if (p && getComputedStyle(p).cursor === 'pointer') continue;
      hit = true;
    }
    let r = el.getBoundingClientRect();
    const cs = getComputedStyle(el);
    let undisplayed = false;
    if (cs.display === 'none') {
      // a control a rule like "li:hover .destroy { display: block }" shows: listed as not drawn,
      // at its parent's place (where a person would move the mouse), when the parent is drawn
      const p = el.parentElement;
      if (!el.matches(SEL) || !p || p === document.body || p.getClientRects().length === 0) continue;
      r = p.getBoundingClientRect();
      undisplayed = true;
    }
    if (r.width < 1 || r.height < 1) continue;
    // laid out but not drawn: hidden; faded, filtered, masked or clipped out with its ancestors (a
    // control shown on hover); or showing nothing (transparent text, no fill, border or picture)
    const hidden = undisplayed || cs.visibility === 'hidden' || !(seen.opacity(el) >= 0.05) ||
      !seen.draws(el);
    if (out.length >= MAX) { truncated = true; break; }
    const tag = cut(el.tagName.toLowerCase(), 40);
    const type = tag === 'input' ? cut((el.getAttribute('type') || 'text').toLowerCase(), 40) : null;
    const role = cut(el.getAttribute('role') || implicit[tag] ||
      (type ? (inputRole[type] || 'textbox') : null) || (el.isContentEditable ? 'textbox' : null), 40);
    const valued = el.value !== undefined && !['checkbox', 'radio'].includes(type);  // not a box's "on"
    const drawn = (pseudo) => {  // an icon drawn by CSS: content: "\00d7"
      const c = getComputedStyle(el, pseudo).content;
      return c && c.length <= 8 && /^["'].+["']$/.test(c) ? c.slice(1, -1) : '';
    };
    const raw = String(el.innerText || (valued && el.value) || drawn('::before') || drawn('::after') || '')
      .slice(0, 4000);
    const text = cut(raw.replace(/\s+/g, ' ').trim(), 80);
    const labels = el.labels && el.labels.length ? Array.from(el.labels, (l) => cut(l.innerText, 80)) : [];
    let context = labels.length ? cut(labels.join(' '), 160) + ' | ' : '';
    for (let a = el.parentElement, k = 0; a && a !== document.body && k < 6; a = a.parentElement, k++) {
      const t = String(a.innerText || '').slice(0, 4000).replace(/\s+/g, ' ').trim();
      if (t.length > text.length + 3) { context += cut(t, 160); break; }
    }
    els.push(el);
    out.push({
      index: out.length, tag, text, role, name: cut(accName(el, labels)), hidden,
      icon: /[\p{L}\p{N}]/u.test(text) ? null : cut(iconWords(el), 80),
      aria_label: cut(el.getAttribute('aria-label')), placeholder: cut(el.getAttribute('placeholder')),
      input_type: type, href: tag === 'a' ? cut(el.getAttribute('href')) : null, context: cut(context, 340),
      box: { x: r.x, y: r.y, width: r.width, height: r.height },
      in_viewport: r.right > 0 && r.bottom > 0 && r.left < W && r.top < H,
    });
  }
  } finally {
    document.adoptedStyleSheets = sheets;
  }
  st.els = els; st.gen += 1;
  let text = document.body ? document.body.innerText || '' : '';
  const textTruncated = text.length > MAXTEXT;
  if (textTruncated) text = text.slice(0, MAXTEXT);
  return { url: cut(location.href, 2000), title: cut(document.title) || '', elements: out,
           elements_truncated: truncated, text, text_truncated: textTruncated,
           width: Number(W) || 0, height: Number(H) || 0 };
})()
