"""`kindling browse`: the whole store as one self-contained, offline HTML page.

The page carries its CSS, script and data inline. The data sits in a
`<script type="application/json">` block with every character that could end it escaped, the
script puts store text on the page only through textContent, and a Content-Security-Policy
allows nothing but the page's own style and script (by hash): no requests, no other script.
"""

from __future__ import annotations

import base64
import hashlib
import json
import os
import re
import sys
import tempfile
import webbrowser
from importlib import resources
from pathlib import Path
from typing import Any

from kindling.clock import now_ms
from kindling.model import ENTITY_TYPES

_MARKER = re.compile(r"__(CSP|CSS|JS|DATA)__")
# What must never appear raw inside a <script> block, and what it becomes in JSON.
_SCRIPT_SAFE = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}


def _template(name: str) -> str:
    return resources.files("kindling").joinpath("templates", name).read_text(encoding="utf-8")


def script_json(value: Any) -> str:
    """JSON that is safe inside a <script> element: no <, >, & or line separators left raw."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return re.sub("[<>&\u2028\u2029]", lambda m: _SCRIPT_SAFE[m.group(0)], text)


def _csp_hash(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def collect(memory) -> dict[str, Any]:
    """Every entity of the store (expired pins and redacted observations included)."""
    status = memory.status()
    data: dict[str, Any] = {
        "store": status["store"],
        "generatedAt": now_ms(),
        "problems": status["problems"],
    }
    for entity_type in ENTITY_TYPES:
        data[entity_type] = memory.list(entity_type, limit=None, include_expired=True)
    return data


def render_page(data: dict[str, Any]) -> str:
    """The HTML page for collected store data."""
    css = _template("browse.css")
    js = _template("browse.js")
    csp = (
        "default-src 'none'; "
        f"script-src {_csp_hash(js)}; style-src {_csp_hash(css)}; "
        "base-uri 'none'; form-action 'none'"
    )
    parts = {"CSP": csp, "CSS": css, "JS": js, "DATA": script_json(data)}
    # One pass, so nothing inserted is ever scanned for markers again.
    return _MARKER.sub(lambda m: parts[m.group(1)], _template("browse.html"))


def write_page(memory, output: str | os.PathLike | None = None) -> Path:
    """Write the page to `output`, or to a new temporary file; returns where it went."""
    page = render_page(collect(memory)).encode("utf-8")
    if output is None:
        fd, name = tempfile.mkstemp(prefix="kindling-browse-", suffix=".html")
        with os.fdopen(fd, "wb") as fh:
            fh.write(page)
        return Path(name)
    path = Path(output)
    path.write_bytes(page)
    return path


def graphical_browser_available() -> bool:
    """True when a browser that opens a window (not a text browser in this terminal) exists."""
    if sys.platform.startswith("linux") and not (
        os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY")
    ):
        return False
    try:
        webbrowser.get()
    except webbrowser.Error:
        return False
    return True


def open_in_browser(path: Path) -> bool:
    """Open the page in the default browser; False when none could be opened."""
    if not graphical_browser_available():
        return False
    try:
        return webbrowser.open(path.resolve().as_uri())
    except webbrowser.Error:
        return False
