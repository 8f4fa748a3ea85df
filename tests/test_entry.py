"""The console entry points: `kindling hook EVENT` skips the click command line, and says
and does exactly what the click command says and does."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import run_kindling

from kindling.entry import _fast_hook


@pytest.mark.parametrize(
    ("args", "env", "expected"),
    [
        (["hook", "PostToolUse"], {}, ("PostToolUse", None)),
        (["hook", "PostToolUse"], {"KINDLING_STORE": "/s"}, ("PostToolUse", "/s")),
        (["hook", "PostToolUse"], {"KINDLING_STORE": ""}, ("PostToolUse", None)),
        (["--store", "/x", "hook", "Stop"], {"KINDLING_STORE": "/s"}, ("Stop", "/x")),
        (["--store=/x", "hook", "post-tool-use"], {}, ("post-tool-use", "/x")),
        (["hook", "--help"], {}, None),
        (["hook"], {}, None),
        (["hook", "Stop", "extra"], {}, None),
        (["hook", "--", "Stop"], {}, None),
        (["search", "hook"], {}, None),
        (["--store", "/x", "search", "Stop"], {}, None),
        ([], {}, None),
    ],
)
def test_which_command_lines_take_the_short_way(args, env, expected, monkeypatch):
    monkeypatch.delenv("KINDLING_STORE", raising=False)
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    assert _fast_hook(args) == expected


def test_a_hook_process_does_not_load_click(tmp_path):
    code = (
        "import sys; sys.argv = ['kindling', 'hook', 'Stop']; "
        "from kindling.entry import main; main(); "
        "print('click' in sys.modules, file=sys.stderr)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], input=b"{}", capture_output=True, cwd=tmp_path, check=True
    )
    assert out.stderr.decode().splitlines()[-1] == "False"


@pytest.mark.parametrize(
    ("event", "data"),
    [
        ("Bogus", b'{"session_id": "s1"}'),  # an unknown event: noted, nothing recorded
        ("Stop", b"not json"),  # a malformed payload
        ("PostToolUse", b'{"hook_event_name": "Stop", "session_id": "s1"}'),  # mismatched
    ],
)
def test_both_ways_say_the_same(project, event, data):
    short = run_kindling("hook", event, input=data, cwd=project)
    click_way = run_kindling("hook", "--", event, input=data, cwd=project)  # `--`: via click
    assert short.returncode == click_way.returncode == 0
    assert short.stdout == click_way.stdout
    assert short.stderr == click_way.stderr
    assert (
        short.stderr.startswith(f"kindling hook {event}: ".encode()) or b"unknown" in short.stderr
    )


def test_both_ways_record_the_same(project):
    body = (
        b'{"session_id": "s1", "hook_event_name": "Stop", "cwd": "%s", '
        b'"last_assistant_message": "done"}' % str(project).encode()
    )
    first = run_kindling("hook", "Stop", input=body, cwd=project)
    second = run_kindling("hook", "--", "Stop", input=body, cwd=project)
    assert first.returncode == second.returncode == 0
    assert first.stdout == second.stdout == b""
    from kindling.memory import Memory

    with Memory(project / ".kindling") as memory:
        recorded = memory.list("observations", limit=None)
    assert len(recorded) == 2
    one, two = recorded
    assert one["content"] == two["content"] and "done" in one["content"]
    assert one["kind"] == two["kind"] and one["scopeIds"] == two["scopeIds"]


def test_the_short_way_finds_the_store_from_a_folder_of_the_work_tree(project):
    """`--store` and KINDLING_STORE name the store or any folder above it, on both ways."""
    inside = project / "src" / "deep"
    inside.mkdir(parents=True)
    body = (
        b'{"session_id": "s2", "hook_event_name": "Stop", "cwd": "%s", '
        b'"last_assistant_message": "found from a subfolder"}' % str(project).encode()
    )
    first = run_kindling("--store", str(inside), "hook", "Stop", input=body, cwd=project)
    second = run_kindling("--store", str(inside), "hook", "--", "Stop", input=body, cwd=project)
    assert first.returncode == second.returncode == 0
    assert first.stderr == second.stderr == b""
    from kindling.memory import Memory

    with Memory(project / ".kindling") as memory:
        found = [o for o in memory.list("observations", limit=None) if "subfolder" in o["content"]]
    assert len(found) == 2
    assert not (inside / ".kindling").exists()
