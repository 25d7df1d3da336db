"""JavaScript the sandbox injects into pages.

Two worlds. The page's own world gets only :func:`determinism_script` (seeded ``Math.random``, a
clock that starts at a fixed instant, no WebRTC), written so the page cannot tell: the replaced
functions print as native code, have native names, lengths and no ``prototype``, and the script
uses only built-ins it captured before any page script ran. Everything else (the judge's element
list and scroll container, caret hiding, the on-demand snippets below) runs in the isolated world
:data:`JUDGE_WORLD`, which shares the DOM but not the JavaScript globals: the page cannot see or
change ``window.__iwr__`` or the functions there.
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass

JUDGE_WORLD = "iwr-judge"
"""Name of the isolated world the judge's scripts run in."""

_DETERMINISM = r"""
(() => {
  const cfg = %(cfg)s;
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
"""


def determinism_script(
    seed: int,
    epoch_ms: int | None,
    no_webrtc: bool = True,
    clock: SteppedClock | None = None,
    popup_seed: int | None = None,
    window_size: tuple[int, int] | None = None,
) -> str:
    """The script for every realm a page creates (its documents, frames, popups and workers):
    seeded ``Math.random``, the fixed clock start (``Date``, ``performance.timeOrigin``, ``Intl``'s
    formatting of "now", ``document.lastModified``), no WebRTC when ``no_webrtc``, and with
    ``clock`` a stepped page clock in the top document (``epoch_ms`` is then required). With
    ``popup_seed``, each window the page opens gets the same script at once, seeded so. With
    ``window_size`` (the outer size the judge gave the window), ``outerWidth``/``outerHeight`` read
    it while a new renderer still reads 0 there."""
    if clock is not None and epoch_ms is None:
        raise ValueError("a stepped clock needs a fixed start (epoch_ms)")
    stepped = None if clock is None else {"name": clock.name, "step": clock.step_ms}
    popup = None if popup_seed is None else determinism_script(popup_seed, epoch_ms, no_webrtc)
    window = None if window_size is None else list(window_size)
    cfg = json.dumps(
        {
            "seed": seed,
            "epoch": epoch_ms,
            "noWebrtc": no_webrtc,
            "clock": stepped,
            "popup": popup,
            "window": window,
        }
    )
    return _DETERMINISM % {"cfg": cfg}


@dataclass(frozen=True)
class SteppedClock:
    """A page clock that moves only when the judge says so, ``step_ms`` at a time. ``name`` is the
    secret event type the judge's world signals the page's world with (a fresh one per tab)."""

    name: str
    step_ms: int


ADVANCE_CLOCK = r"""
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
"""
"""Judge-world script: move a stepped page clock on by one step and wait until the timers that fell
due have run; returns the step in ms (0 when the page runs on the real clock)."""


_JUDGE_INIT = r"""
(() => {
  const cfg = %(cfg)s;
  Object.defineProperty(window, '__iwr__',
    { value: { els: [], gen: 0, clock: cfg.clock }, enumerable: false });
  if (cfg.hideCaret) {
    const sheet = new CSSStyleSheet();
    sheet.replaceSync('*,*::before,*::after{caret-color:transparent !important}');
    document.adoptedStyleSheets = [...document.adoptedStyleSheets, sheet];
  }
})();
"""


def judge_init_script(hide_caret: bool, clock: SteppedClock | None = None) -> str:
    """The judge-world script run at every new document: its state (with the stepped clock's
    event name and step), caret hiding."""
    stepped = None if clock is None else {"name": clock.name, "step": clock.step_ms}
    return _JUDGE_INIT % {"cfg": json.dumps({"hideCaret": hide_caret, "clock": stepped})}


SEEN_JS = r"""
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
"""
"""JavaScript defining ``seen``: ``seen.opacity(el)`` (what opacity, ``filter: opacity()``, an
all-transparent mask and an empty ``clip-path`` leave of ``el``, along its ancestors),
``seen.legible(el, x, y, height)`` (text that stands out from the plain colour behind it, at least
4 px high), ``seen.draws(el)`` (``el`` or what it holds shows anything at all), ``seen.css(el)``
(computed styles, cached for one script run) and ``seen.textClip(el)`` (gradient text). The
observe and visible-text scripts use it, so the judge finds and reads only what a person could
see."""

_OBSERVE = r"""
(() => {
  const MAX = %(max)d, MAXTEXT = %(maxtext)d, MAXSTR = %(maxstr)d;
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
  %(seen)s
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
"""


def observe_script(max_elements: int, max_text: int, max_string: int = 200) -> str:
    """Script returning the :class:`~iwr_bench.tools.models.Observation` fields as JSON.

    Every string is capped (``max_string`` for titles, labels, placeholders and hrefs; 80 for element
    text, 340 for context, ``max_text`` for the page text), so a page cannot flood the caller.
    """
    return _OBSERVE % {"max": max_elements, "maxtext": max_text, "maxstr": max_string, "seen": SEEN_JS}


def element_click_script(index: int) -> str:
    """Script focusing element ``index`` of the last observe and sending it a click event (whatever
    lies on top of it); true when the element was there."""
    return (
        f"(() => {{ const st = window.__iwr__; const el = st && st.els[{int(index)}];"
        " if (!el || !el.isConnected) return false;"
        " if (typeof el.focus === 'function') el.focus(); el.click(); return true; })()"
    )


AIM_JS = r"""
const aim = (el) => {  // where to point at el: its box, scrolled into view; an element not
  let at = el;         // displayed (shown on hover) is pointed at through its displayed parent
  while (at.parentElement && at.getClientRects().length === 0) at = at.parentElement;
  let r = at.getBoundingClientRect();
  if (r.bottom <= 0 || r.right <= 0 || r.top >= innerHeight || r.left >= innerWidth) {
    at.scrollIntoView({ block: 'center', inline: 'center', behavior: 'instant' });
    r = at.getBoundingClientRect();
  }
  return { r, through: at !== el };
};
"""
"""JavaScript defining ``aim(el)``: the box to point at to reach ``el`` (the click tools and the
recorder use it)."""

_POINT = r"""
(() => {
  %(aim)s
  const st = window.__iwr__;
  if (!st || !st.gen) return { error: 'no_observation' };
  const el = st.els[%(index)d];
  if (!el) return { error: 'out_of_range', count: st.els.length };
  if (!el.isConnected) return { error: 'stale' };
  const { r } = aim(el);
  if (%(select)s && typeof el.select === 'function') { el.focus(); el.select(); }
  const x = Math.min(Math.max(r.left + r.width / 2, 0), innerWidth - 1);
  const y = Math.min(Math.max(r.top + r.height / 2, 0), innerHeight - 1);
  const tag = el.tagName.toLowerCase();
  if (!%(hit)s) return { x, y, tag };
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
"""


def point_script(index: int, select: bool = False, hit: bool = False) -> str:
    """Script returning the click point of element ``index`` (or ``{error: ...}``).

    ``hit``: the point must hit the element (or a descendant or one of its labels): the centre
    when it does, else the first of a grid of points over its visible box that does; when none
    does, ``{error: 'covered', by: ...}`` names what lies on top.
    """
    flags = {"select": "true" if select else "false", "hit": "true" if hit else "false"}
    return _POINT % {"index": int(index), "aim": AIM_JS, **flags}


_SCROLL_PROBE = r"""
(() => {
  const words = %s;
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
"""


def scroll_probe_script(region: list[str] | tuple[str, ...] = ()) -> str:
    """Script measuring document and container scroll positions and remembering the container.

    The container is the scrollable element best named by ``region`` (lower-case words matched in
    its id, label, class, text and the headings just before it; it is brought into view), else
    the largest visible one. ``named`` says whether ``region`` picked it."""
    words = [w for w in region if re.fullmatch(r"[a-z0-9]+", w)]
    return _SCROLL_PROBE % json.dumps(words)


SCROLL_PROBE = scroll_probe_script()
"""Script measuring document and main-container scroll positions (and remembering the container)."""

SCROLL_AFTER = r"""
new Promise((resolve) => requestAnimationFrame(() => requestAnimationFrame(() => {
  const doc = document.scrollingElement || document.documentElement;
  const c = window.__iwr__.scroller;
  resolve({ docX: doc ? doc.scrollLeft : 0, docY: doc ? doc.scrollTop : 0,
            cx: c ? c.scrollLeft : null, cy: c ? c.scrollTop : null });
})))
"""
"""Script measuring positions again after two animation frames."""


def scroll_fallback_script(target: str, dx: float, dy: float) -> str:
    """Script scrolling the document or remembered container by (dx, dy) without animation."""
    el = (
        "window.__iwr__.scroller"
        if target == "container"
        else "(document.scrollingElement||document.documentElement)"
    )
    body = f"el.scrollBy({{left: {dx}, top: {dy}, behavior: 'instant'}})"
    return f"(() => {{ const el = {el}; if (el) {body}; }})()"


STATE_PROBE = r"""
(() => {
  const doc = document.scrollingElement || document.documentElement;
  const st = window.__iwr__ || {};
  const c = st.scroller;
  return { url: location.href, x: doc ? doc.scrollLeft : 0, y: doc ? doc.scrollTop : 0,
           cy: c && c.isConnected ? c.scrollTop : null };
})()
"""
"""Script returning the URL and scroll positions."""

WAIT_FRAME = "new Promise((r) => requestAnimationFrame(() => requestAnimationFrame(() => r(true))))"
"""Resolves after two animation frames (the page has painted)."""


_VISIBLE_TEXT = r"""
(() => {
  const MAXRUNS = %(maxruns)d, MAXTEXT = %(maxtext)d, MAXNODES = 20000, ANNOTATE = %(annotate)s;
  const W = innerWidth, H = innerHeight;
  const body = document.body;
  if (!body) return { runs: [], text: '', truncated: false };
  // Hit-test every element, including those the page made click-through (pointer-events: none):
  // a person sees them even though the mouse does not. Restored before returning.
  const sheet = new CSSStyleSheet();
  sheet.replaceSync('*, *::before, *::after { pointer-events: auto !important; }');
  const sheets = [...document.adoptedStyleSheets];  // a copy: the property is a live array
  document.adoptedStyleSheets = [...sheets, sheet];
  %(seen)s
  const style = seen.css;
  const alpha = (c) => {
    if (!c || c === 'transparent') return 0;
    const m = c.match(/rgba?\(([^)]*)\)/);
    if (!m) return 1;
    const p = m[1].split(/[\s,\/]+/).filter(Boolean);
    return p.length > 3 ? parseFloat(p[3]) * (p[3].endsWith('%%') ? 0.01 : 1) : 1;
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
"""


def visible_text_script(max_runs: int, max_text: int, annotate: bool = False) -> str:
    """Script returning the :class:`~iwr_bench.tools.models.VisibleText` fields as JSON.

    With ``annotate`` each run also carries its role (ARIA or implied by its tag), the index of the
    interactive element from the last ``observe`` that holds it (with that control's state), and
    the visible controls that hold no text of their own (inputs, selects, icon buttons) are added
    as runs, everything in document order.

    Only text a person can see counts: rendered, inside the viewport, not hidden or transparent
    along its ancestor chain, not clipped away by an ``overflow`` box, and on top at its own
    position (hit-tested with ``elementsFromPoint``; elements that paint nothing are looked through).
    """
    flag = "true" if annotate else "false"
    return _VISIBLE_TEXT % {"maxruns": max_runs, "maxtext": max_text, "annotate": flag, "seen": SEEN_JS}
