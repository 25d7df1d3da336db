(() => {
  const cfg = __CFG__;
  const G = globalThis;  // a window, or a worker's global scope
  const { apply, construct, defineProperty } = Reflect;
  const wmGet = WeakMap.prototype.get, wmSet = WeakMap.prototype.set;
  const fnToString = Function.prototype.toString;
  const imul = Math.imul, floor = Math.floor;
  const perf = performance, perfNow = Performance.prototype.now;
  const shown = new WeakMap();
  const show = (fn, name) => { apply(wmSet, shown, [fn, 'function ' + name + '() { [native code] }']); };
  const toString = { toString() {
    const text = apply(wmGet, shown, [this]);
    return text === undefined ? apply(fnToString, this, arguments) : text;
  } }.toString;
  show(toString, 'toString');
  defineProperty(Function.prototype, 'toString',
    { value: toString, writable: true, enumerable: false, configurable: true });
  // Seeded PRNG (mulberry32): the same page gets the same sequence.
  let s = cfg.seed >>> 0;
  const random = { random() {
    s = (s + 0x6D2B79F5) >>> 0;
    let t = s;
    t = imul(t ^ (t >>> 15), t | 1);
    t ^= t + imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  } }.random;
  show(random, 'random');
  Math.random = random;
  // A stepped clock (top document only): page time stands still until the judge moves it on by
  // one step after each action, running the timers that fall due in order, so a countdown ticks
  // the same however long an action really took.
  const topDocument = typeof window !== 'undefined' && window === window.top;
  const stepped = cfg.clock !== null && topDocument ? cfg.clock : null;
  let vt = 0;  // page time, ms since the document started (stepped clock)
  if (stepped) {
    const realTimeout = setTimeout, max = Math.max, Num = Number, Str = String, P = Promise;
    const Fn = Function, MC = MessageChannel, post = MessagePort.prototype.postMessage;
    const slice = Array.prototype.slice, listen = EventTarget.prototype.addEventListener;
    const cancel = Event.prototype.preventDefault, create = Object.create;
    const FRAME = 1000 / 60;
    const timers = create(null);
    let nextId = 1, order = 0, busy = false;
    const schedule = (handler, delay, args, every) => {
      const fn = typeof handler === 'function' ? handler : Fn(Str(handler));
      const d = max(0, Num(delay) || 0), id = nextId++;
      timers[id] = { due: vt + d, order: order++, fn, args, every: every ? max(d, 1) : 0 };
      return id;
    };
    const clear = { clearTimeout(id) { delete timers[id]; } }.clearTimeout;
    const setTimeoutV = { setTimeout(handler) {
      return schedule(handler, arguments[1], apply(slice, arguments, [2]), false);
    } }.setTimeout;
    const setIntervalV = { setInterval(handler) {
      return schedule(handler, arguments[1], apply(slice, arguments, [2]), true);
    } }.setInterval;
    const clearIntervalV = { clearInterval(id) { delete timers[id]; } }.clearInterval;
    const raf = { requestAnimationFrame(callback) {
      const wait = floor(vt / FRAME + 1) * FRAME - vt;
      return schedule(() => apply(callback, window, [vt]), wait, [], false);
    } }.requestAnimationFrame;
    const caf = { cancelAnimationFrame(id) { delete timers[id]; } }.cancelAnimationFrame;
    const pnow = { now() { return vt; } }.now;
    for (const [fn, name] of [[clear, 'clearTimeout'], [setTimeoutV, 'setTimeout'], [pnow, 'now'],
      [setIntervalV, 'setInterval'], [clearIntervalV, 'clearInterval'], [raf, 'requestAnimationFrame'],
      [caf, 'cancelAnimationFrame']]) show(fn, name);
    window.setTimeout = setTimeoutV; window.clearTimeout = clear;
    window.setInterval = setIntervalV; window.clearInterval = clearIntervalV;
    window.requestAnimationFrame = raf; window.cancelAnimationFrame = caf;
    defineProperty(Performance.prototype, 'now',
      { value: pnow, writable: true, enumerable: true, configurable: true });
    const due = (limit) => {  // the earliest timer due by ``limit`` (ties in the order they were set)
      let best = null, key = null;
      for (const k in timers) {
        const t = timers[k];
        if (t.due > limit) continue;
        if (best === null || t.due < best.due || (t.due === best.due && t.order < best.order)) {
          best = t; key = k;
        }
      }
      return key;
    };
    const yieldTask = () => new P((resolve) => {  // let promises and the page's own tasks run
      const ch = new MC();
      ch.port1.onmessage = () => resolve();
      apply(post, ch.port2, [0]);
    });
    const step = async () => {
      busy = true;
      const target = vt + stepped.step, begun = apply(perfNow, perf, []);
      try {
        // bounded: a page that keeps setting zero-delay timers cannot hold the judge
        for (let fired = 0; fired < 5000 && apply(perfNow, perf, []) - begun < 4000; fired++) {
          const key = due(target);
          if (key === null) break;
          const t = timers[key];
          vt = max(vt, t.due);
          if (t.every) { t.due = vt + t.every; t.order = order++; } else delete timers[key];
          try { apply(t.fn, window, t.args); } catch (e) { realTimeout(() => { throw e; }, 0); }
          await yieldTask();
        }
      } finally {
        vt = max(vt, target);
        busy = false;
      }
    };
    apply(listen, document, [stepped.name, () => { if (!busy) step(); }]);
    apply(listen, document, [stepped.name + '?', (e) => { if (busy) apply(cancel, e, []); }]);
  }
  if (cfg.epoch !== null) {
    const RealDate = Date, dateString = Date.prototype.toString;
    const t0 = apply(perfNow, perf, []);
    const current = stepped ? () => floor(cfg.epoch + vt)
      : () => floor(cfg.epoch + apply(perfNow, perf, []) - t0);
    const now = { now() { return current(); } }.now;
    show(now, 'now');
    const FakeDate = new Proxy(RealDate, {
      construct(target, args, newTarget) {
        return construct(target, args.length ? args : [current()], newTarget);
      },
      apply() { return apply(dateString, new RealDate(current()), []); },
    });
    show(FakeDate, 'Date');
    const originDesc = Object.getOwnPropertyDescriptor(Performance.prototype, 'timeOrigin');
    if (originDesc && originDesc.get) {
      const origin = stepped ? cfg.epoch : cfg.epoch - t0;
      const getter = { get timeOrigin() { return origin; } };
      const get = Object.getOwnPropertyDescriptor(getter, 'timeOrigin').get;
      show(get, 'get timeOrigin');
      defineProperty(Performance.prototype, 'timeOrigin', { ...originDesc, get });
    }
    RealDate.now = now;
    defineProperty(RealDate.prototype, 'constructor',
      { value: FakeDate, writable: true, enumerable: false, configurable: true });
    G.Date = FakeDate;
    // Intl reads the clock too when format() or formatToParts() is given no date.
    const DTF = Intl.DateTimeFormat.prototype;
    const formatDesc = Object.getOwnPropertyDescriptor(DTF, 'format');
    if (formatDesc && formatDesc.get) {
      const realGet = formatDesc.get, wrapped = new WeakMap();
      const getter = { get format() {
        const real = apply(realGet, this, []);
        let f = apply(wmGet, wrapped, [real]);
        if (f === undefined) {
          f = { '': (date) => apply(real, undefined, [date === undefined ? current() : date]) }[''];
          show(f, '');
          apply(wmSet, wrapped, [real, f]);
        }
        return f;
      } };
      const get = Object.getOwnPropertyDescriptor(getter, 'format').get;
      show(get, 'get format');
      defineProperty(DTF, 'format', { ...formatDesc, get });
    }
    const parts = DTF.formatToParts;
    if (typeof parts === 'function') {
      const formatToParts = { formatToParts(date) {
        return apply(parts, this, [date === undefined ? current() : date]);
      } }.formatToParts;
      show(formatToParts, 'formatToParts');
      defineProperty(DTF, 'formatToParts',
        { value: formatToParts, writable: true, enumerable: false, configurable: true });
    }
    // A document served with no Last-Modified header reports the time it is asked.
    const modified = typeof Document === 'undefined' ? undefined
      : Object.getOwnPropertyDescriptor(Document.prototype, 'lastModified');
    if (modified && modified.get) {
      const two = (n) => (n < 10 ? '0' : '') + n;
      const getter = { get lastModified() {
        apply(modified.get, this, []);  // the same check of what it is called on
        const d = new RealDate(current());
        return two(d.getMonth() + 1) + '/' + two(d.getDate()) + '/' + d.getFullYear() + ' ' +
          two(d.getHours()) + ':' + two(d.getMinutes()) + ':' + two(d.getSeconds());
      } };
      const get = Object.getOwnPropertyDescriptor(getter, 'lastModified').get;
      show(get, 'get lastModified');
      defineProperty(Document.prototype, 'lastModified', { ...modified, get });
    }
  }
  if (cfg.noWebrtc) {
    for (const name of ['RTCPeerConnection', 'webkitRTCPeerConnection', 'RTCDataChannel',
      'RTCRtpSender', 'RTCRtpReceiver', 'RTCRtpTransceiver', 'RTCIceCandidate', 'RTCSessionDescription',
      'RTCIceTransport', 'RTCDtlsTransport', 'RTCSctpTransport', 'RTCCertificate']) {
      delete G[name];
    }
  }
  // A document in a new renderer process may run before that process has learnt the window's size
  // (outerWidth and outerHeight read 0 for a moment, which no person's browser shows): until it
  // knows, they read the size the judge gave the window.
  if (cfg.window !== null && typeof window !== 'undefined') {
    for (const [name, size] of [['outerWidth', cfg.window[0]], ['outerHeight', cfg.window[1]]]) {
      const desc = Object.getOwnPropertyDescriptor(window, name);
      if (!desc || !desc.get) continue;
      const real = desc.get;
      const get = { get [name]() {
        const value = apply(real, this, []);
        return value > 0 ? value : size;
      } };
      const getter = Object.getOwnPropertyDescriptor(get, name).get;
      show(getter, 'get ' + name);
      defineProperty(window, name, { ...desc, get: getter });
    }
  }
  // A window the page opens starts blank and same-origin, so its opener could read the machine's
  // clock in it before anything else runs there: it gets the same script (its own seed) at once.
  if (typeof cfg.popup === 'string' && typeof window !== 'undefined' && typeof window.open === 'function') {
    const realOpen = window.open;
    const open = { open(...args) {
      const w = apply(realOpen, this, args);
      if (w) {
        try { apply(w.eval, w, [cfg.popup]); } catch (e) { /* not reachable from here */ }
      }
      return w;
    } }.open;
    show(open, 'open');
    defineProperty(window, 'open', { value: open, writable: true, enumerable: true, configurable: true });
  }
})();
