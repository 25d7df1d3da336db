(() => {
  const cfg = __CFG__;
  Object.defineProperty(window, '__iwr__',
    { value: { els: [], gen: 0, clock: cfg.clock }, enumerable: false });
  if (cfg.hideCaret) {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync('*,*::before,*::after{caret-color:transparent !important}');
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
  }
})();
