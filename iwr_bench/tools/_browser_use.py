"""The one place that imports browser-use; sets its environment first."""

from __future__ import annotations

import logging
import os
import tempfile
from pathlib import Path

_ENV = {
    "ANONYMIZED_TELEMETRY": "false",
    "BROWSER_USE_CLOUD_SYNC": "false",
    "BROWSER_USE_VERSION_CHECK": "false",
    "BROWSER_USE_CLOUD_HINTS": "false",
    "BROWSER_USE_SETUP_LOGGING": "false",
    "BROWSER_USE_LOGGING_LEVEL": "warning",
}
for _key, _value in _ENV.items():
    os.environ[_key] = _value
if "BROWSER_USE_CONFIG_DIR" not in os.environ:
    _config = Path(tempfile.gettempdir()) / f"iwr-bench-browser-use-{os.getuid()}"
    _config.mkdir(mode=0o700, exist_ok=True)
    os.environ["BROWSER_USE_CONFIG_DIR"] = str(_config)

from browser_use import BrowserProfile, BrowserSession  # noqa: E402

for _name in ("browser_use", "cdp_use", "bubus"):
    logging.getLogger(_name).setLevel(logging.ERROR)

__all__ = ["BrowserProfile", "BrowserSession"]
