"""One Chromium process started by us, inside a :class:`~iwr_bench.tools.jail.Jail`.

Chromium speaks DevTools over a pair of pipes (``--remote-debugging-pipe``), so it opens no
debugging port anywhere: inside the jail the only address a page can reach is its own server. A
:class:`~iwr_bench.tools.devtools_pipe.PipeBridge` on the host's 127.0.0.1 turns the pipes into the
WebSocket our CDP client connects to. Everything Chromium writes (profile, temporary files, crash
dumps) lives under one temporary folder that :meth:`ChromiumProcess.stop` removes after killing the
whole process group and waiting for it.
"""

from __future__ import annotations

import os
import shutil
import signal
import subprocess
import tempfile
import time
from contextlib import suppress
from pathlib import Path

import anyio
import anyio.lowlevel
import anyio.to_thread

from iwr_bench.tools.devtools_pipe import PIPE_FLAG, DevToolsPipes, PipeBridge
from iwr_bench.tools.errors import BrowserStartError
from iwr_bench.tools.jail import Containment, Jail

_LAUNCH_FLAGS: tuple[str, ...] = (
    "--disable-field-trial-config",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--disable-renderer-backgrounding",
    "--disable-back-forward-cache",
    "--disable-ipc-flooding-protection",
    "--disable-hang-monitor",
    "--disable-popup-blocking",
    "--disable-dev-shm-usage",
    "--disable-blink-features=AutomationControlled",
    "--allow-pre-commit-input",
    "--no-service-autorun",
    "--metrics-recording-only",
    "--no-pings",
    "--disable-crash-reporter",
    "--disable-breakpad",
    "--no-default-browser-check",
    "--password-store=basic",
    "--use-mock-keychain",
    "--disable-domain-reliability",
    "--disable-client-side-phishing-detection",
    "--disable-features=MediaRouter,OptimizationHints,Translate,InterestFeedContentSuggestions,"
    "WebRtcHideLocalIpsWithMdns,DialMediaRouteProvider,AcceptCHFrame,IsolateSandboxedIframes,"
    "WebUIOmniboxPopup,WebUIOmniboxAimPopup,WebUIOmniboxFullPopup",
    "--webrtc-ip-handling-policy=disable_non_proxied_udp",
    "--enforce-webrtc-ip-permission-check",
)
"""Flags of every launch: no throttling of background pages, no crash handler, no calls home.
Sandboxed frames stay in their page's renderer (``IsolateSandboxedIframes`` off), so the page's
pinned clock and seeded randomness reach them as they reach every frame, and their memory counts
against the page's bound.

No omnibox popup drawn as a web page (the ``WebUIOmnibox*Popup`` features off): Chromium 156 builds
one, in a renderer of its own, for every window, and every page opens in a window of its own
context. Nobody sees it in a headless browser, yet it cost about 1 s of CPU per page, more than the
page itself (measured: 20 small pages took 40 s of Chromium CPU with it, 15 s without;
``benchmarks/bench_page_open.py``). A name this Chromium does not know is ignored."""


def descendants(pid: int) -> list[int]:
    """PIDs of every process below ``pid`` (read from ``/proc``; empty if it is gone)."""
    found: list[int] = []
    todo = [pid]
    while todo:
        current = todo.pop()
        try:
            tasks = list(Path(f"/proc/{current}/task").iterdir())
        except OSError:
            continue
        for task in tasks:
            with suppress(OSError):
                children = (task / "children").read_text().split()
                for child in children:
                    found.append(int(child))
                    todo.append(int(child))
    return found


_ROOT_PREFIX = "iwr-chromium-"


def sweep_stale_roots() -> None:
    """Remove temporary folders of browsers whose process died without cleaning up (SIGKILL)."""
    places = {Path(tempfile.gettempdir()), Path("/tmp")}
    for folder in (f for place in places for f in place.glob(f"{_ROOT_PREFIX}*-*")):
        owner = folder.name[len(_ROOT_PREFIX) :].split("-", 1)[0]
        if owner.isdigit() and int(owner) != os.getpid() and not Path(f"/proc/{owner}").exists():
            shutil.rmtree(folder, ignore_errors=True)


class ChromiumProcess:
    """A running Chromium in a jail, the bridge to its DevTools pipes and its temporary folder."""

    def __init__(self, executable: str, args: list[str], start_timeout: float) -> None:
        self.executable = executable
        self.args = args
        self.start_timeout = start_timeout
        sweep_stale_roots()
        self.root = Path(tempfile.mkdtemp(prefix=f"{_ROOT_PREFIX}{os.getpid()}-"))
        self.short_tmp: Path | None = None
        self.jail = Jail()
        self.proc: subprocess.Popen[bytes] | None = None
        self.ws_url = ""
        self._pipes: DevToolsPipes | None = None
        self._bridge: PipeBridge | None = None

    @property
    def containment(self) -> Containment:
        """What keeps this browser's pages in."""
        return self.jail.level

    @property
    def pid(self) -> int:
        """PID of the browser process (in the host's PID namespace)."""
        return self.proc.pid if self.proc is not None else 0

    def _argv(self) -> list[str]:
        profile = self.root / "profile"
        return [
            self.executable,
            *self.args,
            *_LAUNCH_FLAGS,
            PIPE_FLAG,
            f"--user-data-dir={profile}",
            f"--crash-dumps-dir={self.root / 'crash'}",
            f"--disk-cache-dir={self.root / 'cache'}",
            "about:blank",
        ]

    def _env(self) -> dict[str, str]:
        tmp = self.root / "tmp"
        # Chromium puts a Unix socket 46 characters below TMPDIR; socket paths end at 107 characters.
        if len(str(tmp)) > 60:
            tmp = self.short_tmp = Path(tempfile.mkdtemp(prefix=f"{_ROOT_PREFIX}{os.getpid()}-", dir="/tmp"))
        tmp.mkdir(exist_ok=True)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("CHROME_", "GOOGLE_"))}
        env.update(TMPDIR=str(tmp), TMP=str(tmp), TEMP=str(tmp), HOME=str(self.root), CHROME_HEADLESS="1")
        return env

    async def start(self) -> None:
        """Start Chromium with DevTools on pipes and serve them as a WebSocket on 127.0.0.1."""
        try:
            with anyio.fail_after(self.start_timeout):
                await anyio.to_thread.run_sync(self.jail.start)
                pipes = self._pipes = DevToolsPipes()
                log = os.open(self.root / "chromium.log", os.O_WRONLY | os.O_CREAT, 0o600)
                try:
                    self.proc = await anyio.to_thread.run_sync(
                        lambda: self.jail.spawn(self._argv(), self._env(), log, pipes)
                    )
                finally:
                    os.close(log)
                    pipes.close_child_ends()
                self._bridge = PipeBridge(pipes)
                self.ws_url = await self._bridge.start()
                await self._check_alive()
        except (TimeoutError, OSError, ValueError, KeyError) as exc:
            await self.stop()
            raise BrowserStartError(f"could not start Chromium at {self.executable}: {exc}") from exc

    async def _check_alive(self) -> None:
        """Fail at once, with Chromium's own words, when it exited at start."""
        await anyio.lowlevel.checkpoint()
        if self.proc is not None and self.proc.poll() is not None:
            lines = (self.root / "chromium.log").read_text(errors="replace").splitlines()
            tail = "\n".join(line for line in lines if "crashpad" not in line)[-600:]
            raise OSError(f"Chromium exited with status {self.proc.returncode}: {tail.strip()}")

    async def stop(self) -> None:
        """Kill the browser's process group, wait for it, end the jail and remove the temporary folder."""
        if self._bridge is not None:
            await self._bridge.stop()
            self._bridge = None
        with anyio.CancelScope(shield=True):
            await anyio.to_thread.run_sync(self._kill)
        if self._pipes is not None:
            self._pipes.close()
            self._pipes = None

    def _kill(self) -> None:
        proc = self.proc
        if proc is not None:
            group = descendants(proc.pid)
            with suppress(ProcessLookupError, PermissionError):
                os.killpg(proc.pid, signal.SIGKILL)
            with suppress(ProcessLookupError):
                proc.kill()
            with suppress(subprocess.TimeoutExpired):
                proc.wait(timeout=10)
            for pid in group:  # helpers that left the group (none should, in a PID namespace)
                with suppress(ProcessLookupError, PermissionError):
                    os.kill(pid, signal.SIGKILL)
            _wait_gone(group, 5.0)
        self.jail.stop()
        shutil.rmtree(self.root, ignore_errors=True)
        if self.short_tmp is not None:
            shutil.rmtree(self.short_tmp, ignore_errors=True)


def _wait_gone(pids: list[int], timeout: float) -> None:
    deadline = time.monotonic() + timeout
    for pid in pids:
        while time.monotonic() < deadline and _alive(pid):
            time.sleep(0.02)


def _alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (OSError, IndexError):
        return False
    return state != "Z"
