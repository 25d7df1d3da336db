"""Turn a model's answer into the page that is judged (protocol.md section 2).

Steps, in order: take the first ```html block (else the whole text), remove every ``<iframe>``,
strip stray fence lines, and replace the asset placeholder prefix. Under ``--protocol official``
:func:`official_postprocess` applies the official generator's rules instead, where they differ.

Asset location: generators keep the placeholder (``asset_base=None``) and
:func:`~iwr_bench.agents.generation.output.write_result` replaces it with the path from the page's
folder to the task's ``assets/`` folder, as the official generator does, so the page shows its
images when opened as ``file://`` from the results tree; the judge's page server answers any
request path ending in ``assets/<file>`` from the task's assets. An explicit ``asset_base`` (e.g.
``assets``, an absolute ``file://`` URI, or :data:`PLACEHOLDER` to keep it) replaces it here instead.
"""

from __future__ import annotations

import re

PLACEHOLDER = "__PLACEHOLDER_ASSETS_BASE_DIR__"
DEFAULT_ASSET_BASE = "assets"

# An opening fence of 3+ backticks tagged html, wherever it stands (after a sentence too); what
# follows on its line belongs to the block. The block ends at the first later line holding only a
# fence at least as long, else at such a fence opening or ending a line, else at the end of the
# text (a truncated answer).
_OPEN = re.compile(r"(?P<fence>`{3,})[ \t]*html\b[ \t]*\n?", re.IGNORECASE)
_IFRAME_PAIRED = re.compile(
    r"<iframe\b[^>]*?(?<!/)>(?:(?!<iframe\b).)*?</iframe\s*>", re.IGNORECASE | re.DOTALL
)
_IFRAME_TAG = re.compile(r"<iframe\b[^>]*>", re.IGNORECASE | re.DOTALL)
_IFRAME_CLOSE = re.compile(r"</iframe\s*>", re.IGNORECASE)
_IFRAME_UNTERMINATED = re.compile(r"<iframe\b[^>]*$", re.IGNORECASE | re.DOTALL)
_STRAY_FENCE = re.compile(r"^[ \t]*`{3,}[\w+-]*[ \t]*\n?", re.MULTILINE)
_PLACEHOLDER_REF = re.compile(r"(?:\.{0,2}/)?" + PLACEHOLDER + r"/*")


def extract_html(answer: str) -> str:
    """The first ```html block of ``answer``, or the whole answer when it has none."""
    m = _OPEN.search(answer)
    if m is None:
        return answer
    n = len(m.group("fence"))
    fence = f"`{{{n},}}"
    alone = re.compile(rf"^[ \t]*{fence}[ \t]*$", re.MULTILINE)
    ending = re.compile(rf"^[ \t]*{fence}|{fence}[ \t]*$", re.MULTILINE)
    end = alone.search(answer, m.end()) or ending.search(answer, m.end())
    return answer[m.end() : end.start()] if end else answer[m.end() :]


def remove_iframes(html: str) -> str:
    """Remove every ``<iframe>``: paired (with content), self-closing, unclosed, and stray closers."""
    html = _IFRAME_PAIRED.sub("", html)
    html = _IFRAME_TAG.sub("", html)
    html = _IFRAME_CLOSE.sub("", html)
    return _IFRAME_UNTERMINATED.sub("", html)


def strip_fences(html: str) -> str:
    """Remove lines that are only a Markdown code fence."""
    return _STRAY_FENCE.sub("", html)


def resolve_assets(html: str, asset_base: str = DEFAULT_ASSET_BASE) -> str:
    """Replace the placeholder prefix (also inside CSS ``url()`` and ``srcset``) with ``asset_base``.

    ``./__PLACEHOLDER__/a.png``, ``/__PLACEHOLDER__/a.png`` and ``__PLACEHOLDER__//a.png`` all become
    ``<asset_base>/a.png``.
    """
    if asset_base == PLACEHOLDER:
        return html
    base = asset_base.rstrip("/")
    prefix = f"{base}/" if base else ""
    return _PLACEHOLDER_REF.sub(lambda _m: prefix, html)


_OFFICIAL_BLOCK = re.compile(r"```html\s*\n?(.*?)\n?```", re.DOTALL | re.IGNORECASE)
_OFFICIAL_PAIRED = re.compile(r"<iframe[^>]*>.*?</iframe>", re.DOTALL | re.IGNORECASE)
_OFFICIAL_TAG = re.compile(r"<iframe[^>]*/?>", re.IGNORECASE)


def official_postprocess(answer: str, asset_base: str | None = None) -> str:
    """The page the official generator makes of ``answer`` (``--protocol official``).

    Its rules, as its code applies them: an empty answer gives an empty page; otherwise the
    stripped answer, or the stripped inside of its first ```` ```html ```` block (the block may
    begin on the fence's own line and ends at the next fence, wherever it stands); paired
    ``<iframe>`` elements, then lone iframe tags, are removed; every remaining ```` ```html ```` and
    ```` ``` ```` is deleted wherever it stands (inside a sentence too); and the placeholder is
    replaced as plain text, so a mistyped prefix (``./__PLACEHOLDER...``) stays as broken as it
    is there. ``asset_base=None`` leaves the placeholder for the writer.
    """
    if not answer:
        return ""
    code = answer.strip()
    block = _OFFICIAL_BLOCK.search(code)
    if block:
        code = block.group(1).strip()
    code = _OFFICIAL_TAG.sub("", _OFFICIAL_PAIRED.sub("", code))
    code = code.replace("```html", "").replace("```", "")
    return code if asset_base is None else code.replace(PLACEHOLDER, asset_base)


def postprocess(answer: str, asset_base: str | None = DEFAULT_ASSET_BASE) -> str:
    """The page to judge for a raw model answer; an empty answer gives an empty page.

    ``asset_base=None`` leaves the placeholder for the writer to resolve.
    """
    html = extract_html(answer)
    html = remove_iframes(html)
    html = strip_fences(html)
    if asset_base is not None:
        html = resolve_assets(html, asset_base)
    return html.strip() + "\n" if html.strip() else ""
