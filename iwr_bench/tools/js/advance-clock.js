(async () => {
  const c = window.__iwr__ && window.__iwr__.clock;
  if (!c) return 0;
  document.dispatchEvent(new CustomEvent(c.name));
  const begun = performance.now();
  while (!document.dispatchEvent(new CustomEvent(c.name + '?', { cancelable: true }))) {
    if (performance.now() - begun > 5000) break;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  return c.step;
})()
