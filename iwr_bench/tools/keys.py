"""Key names to CDP ``Input.dispatchKeyEvent`` parameters."""

from __future__ import annotations

from typing import Any

from iwr_bench.tools.errors import ToolRetry

# key -> (code, windowsVirtualKeyCode, text)
_SPECIAL: dict[str, tuple[str, int, str]] = {
    "Enter": ("Enter", 13, "\r"),
    "Tab": ("Tab", 9, ""),
    "Escape": ("Escape", 27, ""),
    "Backspace": ("Backspace", 8, ""),
    "Delete": ("Delete", 46, ""),
    " ": ("Space", 32, " "),
    "ArrowUp": ("ArrowUp", 38, ""),
    "ArrowDown": ("ArrowDown", 40, ""),
    "ArrowLeft": ("ArrowLeft", 37, ""),
    "ArrowRight": ("ArrowRight", 39, ""),
    "Home": ("Home", 36, ""),
    "End": ("End", 35, ""),
    "PageUp": ("PageUp", 33, ""),
    "PageDown": ("PageDown", 34, ""),
    **{f"F{n}": (f"F{n}", 111 + n, "") for n in range(1, 13)},
}
_ALIASES = {
    "return": "Enter",
    "esc": "Escape",
    "space": " ",
    "spacebar": " ",
    "up": "ArrowUp",
    "down": "ArrowDown",
    "left": "ArrowLeft",
    "right": "ArrowRight",
    "del": "Delete",
    "pgup": "PageUp",
    "pgdn": "PageDown",
}
_MODIFIERS = {"alt": 1, "control": 2, "ctrl": 2, "meta": 4, "cmd": 4, "command": 4, "shift": 8}


def _canonical(name: str) -> str:
    if name in _SPECIAL or len(name) == 1:
        return name
    lowered = name.lower()
    if lowered in _ALIASES:
        return _ALIASES[lowered]
    for key in _SPECIAL:
        if key.lower() == lowered:
            return key
    raise ToolRetry(
        f"unknown key {name!r}; use a character or one of: {', '.join(k for k in _SPECIAL if k != ' ')}"
    )


def key_events(combo: str) -> tuple[dict[str, Any], dict[str, Any]]:
    """CDP params for the key-down and key-up of ``combo`` (``"Enter"``, ``"a"``, ``"Control+a"``)."""
    parts = [p for p in combo.split("+") if p] if combo not in ("+", " ") else [combo]
    if not parts:
        raise ToolRetry("empty key")
    modifiers = 0
    for part in parts[:-1]:
        bit = _MODIFIERS.get(part.lower())
        if bit is None:
            raise ToolRetry(f"unknown modifier {part!r}; use Control, Shift, Alt or Meta")
        modifiers |= bit
    key = _canonical(parts[-1])
    if key in _SPECIAL:
        code, vk, text = _SPECIAL[key]
    else:
        upper = key.upper()
        code = (
            f"Key{upper}" if upper.isalpha() and upper.isascii() else (f"Digit{key}" if key.isdigit() else "")
        )
        vk = ord(upper) if upper.isascii() else 0
        text = key.upper() if modifiers & 8 and key.isalpha() else key
    if modifiers & ~8:
        text = ""  # shortcuts do not insert text
    down: dict[str, Any] = {"key": key, "code": code, "windowsVirtualKeyCode": vk, "modifiers": modifiers}
    if text:
        down["text"] = text
        down["unmodifiedText"] = text
    up: dict[str, Any] = {"key": key, "code": code, "windowsVirtualKeyCode": vk, "modifiers": modifiers}
    return down, up
