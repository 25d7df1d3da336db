new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => {
  const doc = document.scrollingElement || document.documentElement;
  const c = window.__iwr__.scroller;
  resolve({ docX: doc ? doc.scrollLeft : 0, docY: doc ? doc.scrollTop : 0,
            cx: c ? c.scrollLeft : null, cy: c ? c.scrollTop : null });
})))
