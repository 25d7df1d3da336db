(() => {
  const words = __WORDS__;
  const doc = document.scrollingElement || document.documentElement;
  const docY = doc ? doc.scrollTop : 0, docX = doc ? doc.scrollLeft : 0;
  const canDoc = doc && doc.scrollHeight > doc.clientHeight + 1;
  const text = (el, n) => ((el && el.innerText) || '').slice(0, n).toLowerCase();
  const label = (el) => {
    let out = [el.id, el.getAttribute('aria-label') || '', String(el.className), text(el, 400)].join(' ');
    let node = el;  // headings and captions just before it, or before one of its parents
    for (let d = 0; d < 3 && node; d++, node = node.parentElement) {
      let s = node.previousElementSibling;
      for (let k = 0; k < 3 && s; k++, s = s.previousElementSibling) out += ' ' + text(s, 120);
    }
    return out.toLowerCase();
  };
  let best = null, area = 0, named = null, score = 0, namedArea = 0;
  if (document.body) {
    const all = document.body.getElementsByTagName('*');
    const n = Math.min(all.length, 20000);
    for (let i = 0; i < n; i++) {
      const el = all[i];
      if (el.scrollHeight <= el.clientHeight + 1 || el.clientHeight < 50) continue;
      const oy = getComputedStyle(el).overflowY;
      if (oy !== 'auto' && oy !== 'scroll' && oy !== 'overlay') continue;
      const r = el.getBoundingClientRect();
      const a = Math.max(0, Math.min(r.right, innerWidth) - Math.max(r.left, 0)) *
                Math.max(0, Math.min(r.bottom, innerHeight) - Math.max(r.top, 0));
      if (a > area) { area = a; best = el; }
      if (words.length) {
        const l = label(el);
        const s = words.filter((w) => new RegExp('\\b' + w + '\\b').test(l)).length;
        if (s > score || (s > 0 && s === score && a > namedArea)) { score = s; named = el; namedArea = a; }
      }
    }
  }
  if (named) {
    let r = named.getBoundingClientRect();  // brought into view as the recorder does
    if (r.bottom <= 0 || r.right <= 0 || r.top >= innerHeight || r.left >= innerWidth) {
      named.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    }
    best = named;
  }
  (window.__iwr__ || (window.__iwr__ = { els: [], gen: 0 })).scroller = best;
  let c = null;
  if (best) {
    const r = best.getBoundingClientRect();
    c = { y: best.scrollTop, x: best.scrollLeft, cx: r.left + r.width / 2, cy: r.top + r.height / 2 };
  }
  return { docX: doc ? doc.scrollLeft : 0, docY: doc ? doc.scrollTop : 0, canDoc, named: !!named,
           container: c };
})()
