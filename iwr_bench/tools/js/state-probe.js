(() => {
  const doc = document.scrollingElement || document.documentElement;
  const st = window.__iwr__ || {};
  const c = st.scroller;
  return { url: location.href, x: doc ? doc.scrollLeft : 0, y: doc ? doc.scrollTop : 0,
           cy: c && c.isConnected ? c.scrollTop : null };
})()
