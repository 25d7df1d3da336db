(() => {
  __AIM__
  const st = window.__iwr__;
  if (!st || !st.gen) return { error: 'no_observation' };
  const el = st.els[__INDEX__];
  if (!el) return { error: 'out_of_range', count: st.els.length };
  if (!el.isConnected) return { error: 'stale' };
  const { r } = aim(el);
  if (__SELECT__ && typeof el.select === 'function') { el.focus(); el.select(); }
  const x = Math.min(Math.max(r.left + r.width / 2, 0), innerWidth - 1);
  const y = Math.min(Math.max(r.top + r.height / 2, 0), innerHeight - 1);
  const tag = el.tagName.toLowerCase();
  if (!__HIT__) return { x, y, tag };
  // A click lands on whatever is on top at the point, as a person's would: aim where the element
  // itself (a descendant, or one of its labels) is what the point hits, else it is covered.
  const deepHit = (px, py) => {
    let h = document.elementFromPoint(px, py);
    while (h && h.shadowRoot) {
      const inner = h.shadowRoot.elementFromPoint(px, py);
      if (!inner || inner === h) break;
      h = inner;
    }
    return h;
  };
  const labels = el.labels ? Array.from(el.labels) : [];
  const reaches = (h) => !!h && (h === el || el.contains(h) || labels.some((l) => l === h || l.contains(h)));
  const left = Math.max(r.left, 0), right = Math.min(r.right, innerWidth - 1);
  const top = Math.max(r.top, 0), bottom = Math.min(r.bottom, innerHeight - 1);
  const points = [[x, y]];
  for (const fy of [0.5, 0.25, 0.75, 0.1, 0.9]) {
    for (const fx of [0.5, 0.25, 0.75, 0.1, 0.9]) {
      points.push([left + (right - left) * fx, top + (bottom - top) * fy]);
    }
  }
  for (const [px, py] of points) {
    if (px < 0 || py < 0 || px >= innerWidth || py >= innerHeight) continue;
    if (reaches(deepHit(px, py))) return { x: px, y: py, tag };
  }
  const on = deepHit(x, y);
  const what = on ? on.tagName.toLowerCase() + (on.id ? '#' + on.id : '') +
    (typeof on.className === 'string' && on.className.trim() ?
      '.' + on.className.trim().split(/\s+/).slice(0, 2).join('.') : '') : 'nothing';
  return { error: 'covered', tag, by: what.slice(0, 80) };
})()
