"""Import every iwr_bench module and the libraries it loads only when asked (set-up runs this once,
so that their byte code is written; see scripts/setup.sh). Prints how many modules it loaded."""

from __future__ import annotations

import importlib
import pkgutil
import sys
import time

LATER = (
    "sentence_transformers",  # the grounder's sentence embedder
    "easyocr",
    "openvino",
    "open_clip",
    "ray",
    "openai",
    "anthropic",
    "pytest",
    "xdist",
    "textual.pilot",
    "syrupy",
)
"""Imported inside functions (so not by the walk), or by the tests only; torch, torchvision and
transformers come first, through ``preload_libraries``."""


def main() -> None:
    start = time.perf_counter()
    import iwr_bench
    from iwr_bench.engine.setup import preload_libraries

    preload_libraries()  # first: torchvision needs its missing ops registered before the others load it

    failed: list[str] = []
    walked = pkgutil.walk_packages(iwr_bench.__path__, "iwr_bench.")
    names = [m.name for m in walked if not m.name.endswith("__main__")]  # (that one runs the CLI)
    for name in [*names, *LATER]:
        try:
            importlib.import_module(name)
        except (Exception, SystemExit) as exc:  # noqa: BLE001 (an optional backend missing is not set-up's concern)
            failed.append(f"{name} ({type(exc).__name__})")
    took = time.perf_counter() - start
    print(f"setup: {len(sys.modules)} modules byte-compiled in {took:.0f} s")
    if failed:
        print(f"setup: could not import {', '.join(failed)}")


if __name__ == "__main__":
    main()
