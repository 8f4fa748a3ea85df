"""`kindling browse`: the whole store as one self-contained, offline HTML page.

The page carries its CSS, script and data inline. The data sits in a
`<script type="application/json">` block with every character that could end it escaped, the
script puts store text on the page only through textContent, and a Content-Security-Policy
allows nothing but the page's own style and script (by hash): no requests, no other script.

Observations, by far the most numerous, travel as columns (one array per field) with kinds,
scopes, tools and files stored once in tables and referred to by index, so a page of 100,000
observations stays compact and the script can filter them without building objects.
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
from kindling.errors import KindlingError
from kindling.fileio import atomic_output, check_output_path
from kindling.model import ENTITY_TYPES, OBSERVATION_KINDS
from kindling.progress import ProgressFactory

DATA_VERSION = 2
_MARKER = re.compile(r"__(CSP|CSS|JS|DATA)__")
# What must never appear raw inside a <script> block, and what it becomes in JSON.
_SCRIPT_SAFE = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
# A unified diff's file header: `--- a/x` directly followed by `+++ b/x`.
_DIFF_HEADER = re.compile(r"^--- (.+)\n\+\+\+ (.+)$", re.M)
_GIT_HEADER = re.compile(r"^diff --git a/(\S+) b/(\S+)$", re.M)
# Provenance keys that name the tool or the files an observation came from.
_TOOL_KEYS = ("tool", "toolName", "tool_name")
_FILE_KEYS = ("file", "path", "filePath", "file_path", "notebook_path", "files", "paths")


def _template(name: str) -> str:
    return resources.files("kindling").joinpath("templates", name).read_text(encoding="utf-8")


def script_json(value: Any) -> str:
    """JSON that is safe inside a <script> element: no <, >, & or line separators left raw."""
    text = json.dumps(value, ensure_ascii=False, separators=(",", ":"), sort_keys=True)
    return re.sub("[<>&\u2028\u2029]", lambda m: _SCRIPT_SAFE[m.group(0)], text)


def _csp_hash(source: str) -> str:
    digest = hashlib.sha256(source.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(digest).decode("ascii") + "'"


def tool_of(observation: dict) -> str | None:
    """The tool an observation came from, as its provenance names it."""
    prov = observation.get("provenance") or {}
    for key in _TOOL_KEYS:
        value = prov.get(key)
        if isinstance(value, str) and value:
            return value
    return None


def _diff_path(raw: str) -> str | None:
    path = raw.split("\t", 1)[0].strip()
    if path == "/dev/null" or not path:
        return None
    return path[2:] if path[:2] in ("a/", "b/") else path


def files_of(observation: dict) -> list[str]:
    """Paths an observation is about: from its provenance and from diff headers in its text."""
    found: list[str] = []
    prov = observation.get("provenance") or {}
    for key in _FILE_KEYS:
        value = prov.get(key)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and item:
                found.append(item)
    content = observation.get("content") or ""
    if "\n+++ " in content:
        for match in _DIFF_HEADER.finditer(content):
            found.extend(p for p in map(_diff_path, match.groups()) if p)
    if "diff --git " in content:
        for match in _GIT_HEADER.finditer(content):
            found.extend(match.groups())
    return list(dict.fromkeys(found))


class _Table:
    """Distinct values in first-seen order; each value's index stands for it on the page."""

    def __init__(self, seed: tuple = ()) -> None:
        self.values: list = []
        self._index: dict = {}
        for value in seed:
            self.add(value)

    def add(self, value: Any) -> int:
        key = json.dumps(value, sort_keys=True) if isinstance(value, dict) else value
        if key not in self._index:
            self._index[key] = len(self.values)
            self.values.append(value)
        return self._index[key]


def pack_observations(observations: list[dict]) -> dict[str, Any]:
    """Observations (newest first) as columns plus the shared tables their indexes point into."""
    ordered = sorted(observations, key=lambda o: (-o["ts"], o["id"]))
    kinds, scopes, tools, files = _Table(OBSERVATION_KINDS), _Table(), _Table(), _Table()
    cols: dict[str, list] = {
        k: [] for k in ("id", "kind", "ts", "content", "scope", "tool", "files", "prov", "redacted")
    }
    for obs in ordered:
        tool = tool_of(obs)
        cols["id"].append(obs["id"])
        cols["kind"].append(kinds.add(obs["kind"]))
        cols["ts"].append(obs["ts"])
        cols["content"].append(obs["content"])
        cols["scope"].append(scopes.add(obs.get("scopeIds") or {}))
        cols["tool"].append(-1 if tool is None else tools.add(tool))
        cols["files"].append([files.add(f) for f in files_of(obs)])
        cols["prov"].append(obs.get("provenance") or 0)
        cols["redacted"].append(1 if obs.get("redacted") else 0)
    return {
        "columns": cols,
        "kinds": kinds.values,
        "scopes": scopes.values,
        "tools": tools.values,
        "files": files.values,
    }


def unpack_observations(packed: dict[str, Any]) -> list[dict]:
    """The observations back from their columns (what the page shows as each one's JSON)."""
    cols = packed["columns"]
    return [
        {
            "id": cols["id"][i],
            "kind": packed["kinds"][cols["kind"][i]],
            "content": cols["content"][i],
            "provenance": cols["prov"][i] or {},
            "ts": cols["ts"][i],
            "scopeIds": packed["scopes"][cols["scope"][i]],
            "redacted": bool(cols["redacted"][i]),
        }
        for i in range(len(cols["id"]))
    ]


def collect(memory, progress: ProgressFactory | None = None) -> dict[str, Any]:
    """Every entity of the store (expired pins and redacted observations included).

    `progress(label, total)`, when given, hears each entity type read.
    """
    step = progress("Reading", 1 + len(ENTITY_TYPES)) if progress else None
    status = memory.status()
    if step is not None:
        step(1)
    data: dict[str, Any] = {
        "version": DATA_VERSION,
        "store": status["store"],
        "generatedAt": now_ms(),
        "problems": status["problems"],
    }
    for entity_type in ENTITY_TYPES:
        entities = memory.list(entity_type, limit=None, include_expired=True)
        data[entity_type] = (
            pack_observations(entities) if entity_type == "observations" else entities
        )
        if step is not None:
            step(1)
    data["retired"] = retired_members(memory, data["capsules"])
    return data


def retired_members(memory, capsules: list[dict]) -> list[str]:
    """Capsule members `kindling gc` retired (kindling.retention.record), so the page says
    "retired" rather than "missing" for them; only those capsules name."""
    from kindling.retention.record import read_records

    retired, _ = read_records(memory.store)
    if not retired:
        return []
    return sorted({m for c in capsules for m in c["observationIds"] if m in retired})


def render_page(data: dict[str, Any]) -> str:
    """The HTML page for collected store data."""
    css = _template("browse.css")
    # One script: the store-agnostic parts, then the page that uses them.
    js = _template("browse_parts.js") + _template("browse.js")
    csp = (
        "default-src 'none'; "
        f"script-src {_csp_hash(js)}; style-src {_csp_hash(css)}; "
        "base-uri 'none'; form-action 'none'"
    )
    parts = {"CSP": csp, "CSS": css, "JS": js, "DATA": script_json(data)}
    # One pass, so nothing inserted is ever scanned for markers again.
    return _MARKER.sub(lambda m: parts[m.group(1)], _template("browse.html"))


def write_page(
    memory, output: str | os.PathLike | None = None, progress: ProgressFactory | None = None
) -> Path:
    """Write the page to `output`, or to a new temporary file; returns where it went."""
    data = collect(memory, progress)
    step = progress("Writing page", 1) if progress else None
    page = render_page(data).encode("utf-8")
    if step is not None:
        step(1)
    if output is None:
        fd, name = tempfile.mkstemp(prefix="kindling-browse-", suffix=".html")
        with os.fdopen(fd, "wb") as fh:
            fh.write(page)
        return Path(name)
    path = Path(output)
    check_output_path(output)
    try:
        with atomic_output(path, make_parents=False) as fh:
            fh.write(page)
    except OSError as exc:
        raise KindlingError(f"cannot write {path}: {exc.strerror or exc}") from None
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
