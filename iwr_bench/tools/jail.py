"""Where Chromium runs: a thread that lives inside fresh network and PID namespaces.

A :class:`Jail` owns one daemon thread. The thread moves itself into a new network namespace in
which only loopback is up (nothing outside it can be reached: not the internet, not the machine's
other addresses, not a port another program listens on) and sets the PID namespace of its future
children to a new one. Chromium is spawned from that thread, so it becomes PID 1 of its own PID
namespace: when it dies, the kernel kills every process it left (renderers, zygotes, crash
handlers). It is spawned with ``PR_SET_PDEATHSIG = SIGKILL``, which fires when the spawning
*thread* ends; the thread lives until the browser is closed, and dies with the process whatever
kills it.

The page server and the DevTools connection need sockets inside the namespace: the thread creates
them (:meth:`Jail.listen`, :meth:`Jail.connect`); a socket keeps the namespace it was made in.

Without the privilege to create namespaces the jail falls back to the current namespaces
(``level == "intercept-only"``): the only network rule is then CDP request interception, and a
single warning says so.
"""

from __future__ import annotations

import ctypes
import fcntl
import os
import queue
import signal
import socket
import struct
import subprocess
import threading
import warnings
from collections.abc import Callable, Sequence
from concurrent.futures import Future
from functools import cache
from typing import Any, Literal, TypeVar

from iwr_bench.tools.devtools_pipe import DevToolsPipes

T = TypeVar("T")
Containment = Literal["netns", "intercept-only"]
"""How the sandbox keeps a page's connections in: a network namespace, or CDP interception only."""

_CLONE_NEWNET = 0x40000000
_CLONE_NEWPID = 0x20000000
_PR_SET_PDEATHSIG = 1
_SIOCGIFFLAGS = 0x8913
_SIOCSIFFLAGS = 0x8914
_IFF_UP = 0x1
_libc = ctypes.CDLL(None, use_errno=True)


class ContainmentWarning(UserWarning):
    """Pages run without a network namespace (only CDP interception keeps their requests in)."""


def _unshare(flags: int) -> None:
    if _libc.unshare(ctypes.c_int(flags)) != 0:
        err = ctypes.get_errno()
        raise OSError(err, f"unshare: {os.strerror(err)}")


def _loopback_up() -> None:
    with socket.socket(socket.AF_INET, socket.SOCK_DGRAM) as sock:
        request = struct.pack("16sH14s", b"lo", 0, b"")
        flags = struct.unpack("16sH14s", fcntl.ioctl(sock, _SIOCGIFFLAGS, request))[1]
        fcntl.ioctl(sock, _SIOCSIFFLAGS, struct.pack("16sH14s", b"lo", flags | _IFF_UP, b""))


def _die_with_parent() -> None:
    """``preexec_fn``: SIGKILL this child when the thread that spawned it ends."""
    _libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL)


FORCE_ENV = "IWR_BENCH_CONTAINMENT"
"""Set to ``intercept-only`` to run without namespaces even where they work (tests, odd kernels)."""


def containment_level() -> Containment:
    """The containment pages get here: ``netns`` when a network namespace can be created.

    Warns once (:class:`ContainmentWarning`) when it cannot, or when :data:`FORCE_ENV` turns it off.
    """
    forced = os.environ.get(FORCE_ENV, "")
    if forced == "intercept-only":
        _warn_once(f"{FORCE_ENV}=intercept-only")
        return "intercept-only"
    level = _probe()
    if level != "netns":
        _warn_once("cannot create a network namespace (needs root or user namespaces)")
    return level


@cache
def _warn_once(why: str) -> None:
    warnings.warn(
        f"{why}: pages are kept in by CDP request interception only; connections it cannot see "
        "may leave the sandbox: WebSocket, WebTransport, speculation-rules prefetch, preconnect "
        "(also opened ahead of a refused frame load), beacons sent while a tab closes "
        "(WebRTC is removed from pages)",
        ContainmentWarning,
        stacklevel=3,
    )


@cache
def _probe() -> Containment:
    result: list[Containment] = []

    def probe() -> None:
        try:
            _unshare(_CLONE_NEWNET)
            _loopback_up()
            result.append("netns")
        except OSError:
            result.append("intercept-only")

    thread = threading.Thread(target=probe, name="iwr-netns-probe", daemon=True)
    thread.start()
    thread.join()
    return result[0]


class Jail:
    """A thread in fresh network and PID namespaces that spawns Chromium and makes its sockets."""

    def __init__(self) -> None:
        self._calls: queue.SimpleQueue[tuple[Callable[[], Any], Future[Any]] | None] = queue.SimpleQueue()
        self._ready: Future[Containment] = Future()
        self._thread = threading.Thread(target=self._main, name="iwr-jail", daemon=True)
        self.level: Containment = "intercept-only"
        self._wanted: Containment = "intercept-only"

    def start(self) -> Containment:
        """Start the thread and enter the namespaces; returns the containment reached."""
        self._wanted = containment_level()  # warns once when namespaces are unavailable or turned off
        self._thread.start()
        self.level = self._ready.result()
        return self.level

    def _main(self) -> None:
        level: Containment = "intercept-only"
        if self._wanted == "netns":
            try:
                _unshare(_CLONE_NEWNET)
                _loopback_up()
                level = "netns"
                _unshare(_CLONE_NEWPID)
            except OSError:
                pass  # the level says what was reached; a missing PID namespace only loses a backstop
        self._ready.set_result(level)
        while (item := self._calls.get()) is not None:
            func, future = item
            try:
                future.set_result(func())
            except BaseException as exc:  # noqa: BLE001 - handed to the caller, who re-raises it
                future.set_exception(exc)

    def call(self, func: Callable[[], T]) -> T:
        """Run ``func`` in the jail thread and return its result (blocks the calling thread)."""
        if not self._thread.is_alive():
            raise RuntimeError("the jail thread is not running")
        future: Future[T] = Future()
        self._calls.put((func, future))
        return future.result()

    def spawn(
        self, argv: Sequence[str], env: dict[str, str], log: int, pipes: DevToolsPipes | None = None
    ) -> subprocess.Popen[bytes]:
        """Start ``argv`` inside the jail, in its own session, killed if the jail thread ends.

        ``pipes``, when given, become the child's descriptors 3 and 4 (DevTools over a pipe); every
        other descriptor of ours is non-inheritable and closes at exec."""

        def prepare() -> None:
            _die_with_parent()  # pdeathsig must be set in the child
            if pipes is not None:
                pipes.place_in_child()

        def run() -> subprocess.Popen[bytes]:
            return subprocess.Popen(
                list(argv),
                env=env,
                stdin=subprocess.DEVNULL,
                stdout=log,
                stderr=log,
                start_new_session=True,
                close_fds=pipes is None,  # closing would take fds 3 and 4 too; ours are CLOEXEC
                preexec_fn=prepare,
            )

        return self.call(run)

    def listen(self) -> socket.socket:
        """A TCP socket listening on 127.0.0.1 (ephemeral port) inside the jail's network."""

        def make() -> socket.socket:
            sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
            sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
            sock.bind(("127.0.0.1", 0))
            sock.listen(128)
            sock.setblocking(False)
            return sock

        return self.call(make)

    def stop(self) -> None:
        """End the thread (anything it spawned and did not reap gets SIGKILL)."""
        if self._thread.is_alive():
            self._calls.put(None)
            self._thread.join(timeout=10)
