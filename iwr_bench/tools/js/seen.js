const seen = (() => {  // what a person can see of an element; shared by observe and visible_text
  const styles = new Map();
  const css = (el) => {
    let s = styles.get(el);
    if (!s) { s = getComputedStyle(el); styles.set(el, s); }
    return s;
  };
  const rgba = (c) => {  // [r, g, b, a] of a computed colour; null for a form this does not read
    if (!c || c === 'transparent') return [0, 0, 0, 0];
    const m = /rgba?\(([^)]*)\)/.exec(c);
    if (!m) return null;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean).map(parseFloat);
    return p.length < 3 ? null : [p[0], p[1], p[2], p.length > 3 ? p[3] : 1];
  };
  const length = (t, whole) => t.endsWith('%') ? parseFloat(t) * whole / 100 : parseFloat(t) || 0;
  const clipsAll = (clip, el) => {  // a clip-path that leaves nothing of the box
    const w = el.offsetWidth || el.getBoundingClientRect().width, h = el.offsetHeight ||
      el.getBoundingClientRect().height;
    let m = /^inset\(([^)]*)\)/.exec(clip);
    if (m) {
      const t = m[1].split(/\s+round\s+/)[0].trim().split(/\s+/);
      const [a, b = a, c = a, d = b] = t;
      return length(a, h) + length(c, h) >= h - 0.5 || length(b, w) + length(d, w) >= w - 0.5;
    }
    m = /^circle\(\s*([\d.]+(?:px|%)?)/.exec(clip);
    if (m) return length(m[1], Math.min(w, h)) <= 0.5;
    m = /^ellipse\(\s*([\d.]+(?:px|%)?)\s+([\d.]+(?:px|%)?)/.exec(clip);
    if (m) return length(m[1], w) <= 0.5 || length(m[2], h) <= 0.5;
    m = /^polygon\(([^)]*)\)/.exec(clip);
    if (m) {
      const pts = m[1].replace(/^\s*(nonzero|evenodd)\s*,/, '').split(',').map((q) => q.trim().split(/\s+/));
      const xs = pts.map((q) => length(q[0] || '0', w)), ys = pts.map((q) => length(q[1] || '0', h));
      return Math.max(...xs) - Math.min(...xs) < 1 || Math.max(...ys) - Math.min(...ys) < 1;
    }
    return false;
  };
  const own = (el) => {  // the share of el's own paint that opacity, filters, masks and clip-path leave
    const s = css(el);
    let o = parseFloat(s.opacity);
    if (s.filter && s.filter !== 'none') {
      for (const m of s.filter.matchAll(/opacity\(\s*([\d.e+-]+)(%?)\s*\)/g)) {
        o *= Math.max(0, Math.min(1, parseFloat(m[1]) * (m[2] ? 0.01 : 1)));
      }
    }
    const mask = s.maskImage || s.webkitMaskImage;
    if (mask && mask !== 'none' && /gradient\(/.test(mask)) {  // every stop transparent: masks all
      const stops = (mask.match(/rgba?\([^)]*\)|transparent/g) || []).map(rgba);
      if (stops.length && stops.every((c) => c && c[3] <= 0.05)) o = 0;
    }
    if (s.clipPath && s.clipPath !== 'none' && clipsAll(s.clipPath, el)) o = 0;
    return o;
  };
  const opacities = new Map();
  const opacity = (el) => {  // what survives along the ancestor chain (a faded parent fades all it holds)
    if (!el || el.nodeType !== 1) return 1;
    let o = opacities.get(el);
    if (o === undefined) {
      o = own(el);
      if (o > 0.05) o *= opacity(el.parentElement || (el.getRootNode() && el.getRootNode().host) || null);
      opacities.set(el, o);
    }
    return o;
  };
  const lin = (v) => { v /= 255; return v <= 0.03928 ? v / 12.92 : Math.pow((v + 0.055) / 1.055, 2.4); };
  const lum = (c) => 0.2126 * lin(c[0]) + 0.7152 * lin(c[1]) + 0.0722 * lin(c[2]);
  const contrast = (a, b) => {
    const x = lum(a), y = lum(b);
    return (Math.max(x, y) + 0.05) / (Math.min(x, y) + 0.05);
  };
  const over = (top, a, under) => [0, 1, 2].map((i) => top[i] * a + under[i] * (1 - a));
  const inX = (v) => Math.min(Math.max(v, 0), innerWidth - 1);  // a point inside the viewport
  const inY = (v) => Math.min(Math.max(v, 0), innerHeight - 1);
  const PICTURES = new Set(['IMG', 'CANVAS', 'VIDEO', 'IFRAME', 'OBJECT', 'EMBED', 'svg', 'SVG', 'PICTURE']);
  const root = document.documentElement, body = document.body;
  const canvas = () => {  // the colour the viewport is cleared to (the root's, else the body's)
    for (const e of [root, body]) {
      const c = e && rgba(css(e).backgroundColor);
      if (c && c[3] > 0.05) return over(c, c[3], [255, 255, 255]);
    }
    return [255, 255, 255];
  };
  // The plain colour at (x, y) under el's own box (or from el's own box down, for el's text);
  // null over a picture or a pattern.
  const behind = (el, x, y, own = false) => {
    const stack = document.elementsFromPoint(x, y);
    let start = 0;
    for (let a = el; a; a = a.parentElement) {
      const i = stack.indexOf(a);
      if (i >= 0) { start = a === el && !own ? i + 1 : i; break; }
    }
    const layers = [];
    for (const e of stack.slice(start)) {
      if (e === root || e === body) continue;  // their colour is the canvas'
      const o = opacity(e);
      if (o <= 0.05) continue;
      if (PICTURES.has(e.tagName)) return null;
      const s = css(e);
      if (s.backgroundImage !== 'none') return null;
      const c = rgba(s.backgroundColor);
      if (!c) return null;
      if (c[3] * o > 0.05) layers.push([c, c[3] * o]);
      if (c[3] * o >= 0.99) break;
    }
    let colour = layers.length && layers[layers.length - 1][1] >= 0.99 ? [255, 255, 255] : canvas();
    for (let i = layers.length - 1; i >= 0; i--) colour = over(layers[i][0], layers[i][1], colour);
    return colour;
  };
  const textClip = (el) => {
    for (let a = el, k = 0; a && k < 4; a = a.parentElement, k++) {
      if ((css(a).webkitBackgroundClip || css(a).backgroundClip) === 'text') return true;
    }
    return false;
  };
  // Text a person can read at (x, y): a fill that stands out from the plain colour behind it (or
  // lies over a picture, which this cannot judge), an outline or a shadow, at least 4 px high.
  const legible = (el, x, y, height) => {
    const s = css(el);
    if (parseFloat(s.fontSize) < 4 || (height !== undefined && height < 4)) return false;
    if (s.textShadow !== 'none' || parseFloat(s.webkitTextStrokeWidth) > 0 || textClip(el)) return true;
    const fill = rgba(s.webkitTextFillColor || s.color);
    if (!fill) return true;
    const a = fill[3] * opacity(el);
    if (a <= 0.05) return false;
    const under = behind(el, x, y, true);
    return !under || contrast(over(fill, a, under), under) >= 1.1;
  };
  const boxDraws = (e, s, r) => {  // whether e's own box shows: a picture, a fill, a border, a shadow
    if (PICTURES.has(e.tagName)) return true;
    if (s.backgroundImage !== 'none' || s.boxShadow !== 'none') return true;
    if (e.tagName === 'INPUT' && ['checkbox', 'radio', 'range', 'color', 'file'].includes(e.type) &&
        s.appearance !== 'none') return true;  // drawn by the browser
    for (const side of ['Top', 'Right', 'Bottom', 'Left']) {
      const c = rgba(s['border' + side + 'Color']);
      if (parseFloat(s['border' + side + 'Width']) >= 1 && s['border' + side + 'Style'] !== 'none' &&
          (!c || c[3] >= 0.1)) return true;
    }
    const oc = rgba(s.outlineColor);
    if (s.outlineStyle !== 'none' && parseFloat(s.outlineWidth) >= 1 && (!oc || oc[3] >= 0.1)) return true;
    const bg = rgba(s.backgroundColor);
    if (!bg) return true;
    if (bg[3] < 0.1) return false;
    const under = behind(e, inX(r.left + r.width / 2), inY(r.top + r.height / 2));
    return !under || contrast(over(bg, bg[3] * opacity(e), under), under) >= 1.03;
  };
  const range = document.createRange();
  // Whether el, or anything it holds, puts something a person can see on the screen (a control
  // drawn with transparent text and no fill, border or picture puts nothing there).
  const draws = (el) => {
    let budget = 80;
    const visit = (e) => {
      if (--budget < 0) return true;  // too much to look through: take it as drawn
      const s = css(e);
      if (s.display === 'none' || opacity(e) <= 0.05) return false;
      const vis = s.visibility === 'visible';
      const r = e.getBoundingClientRect();
      if (vis && r.width >= 2 && r.height >= 2) {
        if (boxDraws(e, s, r)) return true;
        for (const pseudo of ['::before', '::after']) {
          const p = getComputedStyle(e, pseudo);
          if (!p.content || p.content === 'none' || p.content === 'normal') continue;
          const pc = rgba(p.color), pb = rgba(p.backgroundColor);
          if (/url\(/.test(p.content) || p.backgroundImage !== 'none' || !pc || pc[3] > 0.05 ||
              (pb && pb[3] >= 0.1)) return true;
        }
        if ((e.tagName === 'INPUT' || e.tagName === 'TEXTAREA') && (e.value || e.placeholder) &&
            legible(e, inX(r.left + 4), inY(r.top + r.height / 2))) return true;
      }
      for (const n of e.childNodes) {
        if (n.nodeType === 3) {
          if (!vis || !n.data.trim()) continue;
          range.selectNodeContents(n);
          for (const t of Array.from(range.getClientRects()).slice(0, 3)) {
            if (t.width < 1 || t.height < 1) continue;
            if (legible(e, inX(t.left + t.width / 2), inY(t.top + t.height / 2), t.height)) return true;
          }
        } else if (n.nodeType === 1 && visit(n)) {
          return true;
        }
      }
      if (e.shadowRoot) for (const c of e.shadowRoot.children) if (visit(c)) return true;
      return false;
    };
    if (visit(el)) return true;
    // an empty field that fills the box around it (an editor's writing area inside its frame):
    // a person sees that frame as the field
    if (!(el.isContentEditable || el.tagName === 'TEXTAREA' || el.tagName === 'INPUT') ||
        opacity(el) <= 0.05 || css(el).visibility !== 'visible') return false;
    const r = el.getBoundingClientRect();
    let a = el.parentElement;
    for (let i = 0; a && i < 2; i++, a = a.parentElement) {
      const ar = a.getBoundingClientRect();
      if (r.width * r.height >= 0.5 * ar.width * ar.height && ar.width >= 2 && ar.height >= 2 &&
          boxDraws(a, css(a), ar)) return true;
    }
    return false;
  };
  return { css, rgba, opacity, legible, draws, behind, textClip };
})();
