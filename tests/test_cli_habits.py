"""The command-line habits people bring from git and ripgrep: --store as git -C, - for stdin,
search --exit-code, progress only where someone watches, one-line import errors, id
completion."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys

import pytest
from click.testing import CliRunner
from conftest import run_kindling

from kindling.cli import cli
from kindling.memory import Memory


@pytest.fixture
def work_tree(tmp_path):
    """A git work tree `proj` with a store at its top, a nested folder and one observation."""
    top = tmp_path / "proj"
    (top / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(top)], check=True)
    with Memory.init(top) as memory:
        memory.log("the retry loop never backs off", kind="error")
    return top


def invoke(*args, input=None, env=None):
    return CliRunner().invoke(cli, list(args), input=input, env=env)


# ---------------------------------------------------------------- --store as git -C


@pytest.mark.parametrize("where", [".", "src", "src/deep", ".kindling"])
def test_store_takes_any_folder_of_the_work_tree(work_tree, where):
    result = invoke("--store", str(work_tree / where), "search", "retry", "--json")
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["candidates"]


def test_kindling_store_takes_the_same(work_tree, tmp_path):
    result = invoke("status", "--json", env={"KINDLING_STORE": str(work_tree / "src")})
    assert result.exit_code == 0, result.output
    assert json.loads(result.stdout)["store"] == str(work_tree / ".kindling")
    from kindling.settings import Settings

    settings = Settings.from_environ({"KINDLING_STORE": str(work_tree / "src" / "deep")})
    assert settings.store == str(work_tree / ".kindling")


def test_a_folder_with_no_store_above_says_so(tmp_path):
    lonely = tmp_path / "lonely"
    lonely.mkdir()
    result = invoke("--store", str(lonely), "status")
    assert result.exit_code == 1
    assert result.output.startswith("Error: no Kindling store") and "Traceback" not in result.output


def test_a_symlinked_store_is_never_followed_by_the_search(work_tree, tmp_path):
    other = tmp_path / "other"
    (other / "inner").mkdir(parents=True)
    (other / ".kindling").symlink_to(work_tree / ".kindling")
    result = invoke("--store", str(other / "inner"), "status")
    assert result.exit_code == 1
    assert "symlink" in result.output
    assert len(result.output.strip().splitlines()) == 1
    # named itself, a store reached through a link is the person's choice (as before)
    assert invoke("--store", str(other / ".kindling"), "status").exit_code == 0


def test_init_with_store_still_creates_what_it_names(tmp_path, work_tree):
    fresh = work_tree / "src" / "scratch-store"
    result = invoke("--store", str(fresh), "init")
    assert result.exit_code == 0, result.output
    assert (fresh / "objects").is_dir()  # not the work tree's store above it
    again = invoke("--store", str(work_tree), "init")
    assert again.exit_code == 0 and str(work_tree / ".kindling") in again.output
    assert not (work_tree / "objects").exists()


# ---------------------------------------------------------------- - reads stdin


@pytest.fixture
def store(store_dir):
    return str(store_dir)


def test_capsule_close_summary_reads_stdin(store, memory):
    cap = memory.open_capsule("fix the retry loop").entity["id"]
    text = "Backoff was never applied\nAdded jitter and a cap\n"
    result = invoke("--store", store, "capsule", "close", cap, "--summary", "-", input=text)
    assert result.exit_code == 0, result.output
    summary = memory.list("summaries")[0]
    assert summary["content"] == text.rstrip("\n")


def test_every_text_option_reads_stdin(store, memory):
    obs = memory.log("hunter2 leaked in a log").entity["id"]
    opened = invoke("--store", store, "capsule", "open", "--intent", "-", input="from stdin\n")
    assert opened.exit_code == 0, opened.output
    assert memory.get(opened.stdout.strip()).entity["intent"] == "from stdin"
    pinned = invoke("--store", store, "pin", "observation", obs, "--note", "-", input="why\n")
    assert pinned.exit_code == 0, pinned.output
    assert memory.get(pinned.stdout.strip()).entity["reason"] == "why"
    logged = invoke(
        "--store", store, "log", "x", "--provenance", "-", input='{"file": "a.py"}', env=None
    )
    assert logged.exit_code == 0, logged.output
    assert memory.get(logged.stdout.strip()).entity["provenance"] == {"file": "a.py"}
    found = invoke("--store", store, "search", "-", "--json", input="hunter2 leaked\n")
    assert json.loads(found.stdout)["provenance"]["query"] == "hunter2 leaked"
    forgot = invoke("--store", store, "forget", "--matching", "-", "--dry-run", input="hunter2\n")
    assert forgot.exit_code == 0, forgot.output
    assert obs in forgot.stdout


def test_demo_query_reads_stdin():
    result = invoke("demo", "-", input="rate limiter\n")
    assert result.exit_code == 0, result.output
    assert '$ kindling search "rate limiter"' in result.output


def test_stdin_is_read_once(store):
    result = invoke("--store", store, "log", "-", "--provenance", "-", input="{}")
    assert result.exit_code == 2
    assert "only one value may be -" in result.output


def test_stdin_must_be_text(store):
    result = CliRunner().invoke(
        cli, ["--store", store, "capsule", "open", "--intent", "-"], input=b"\xff\xfe"
    )
    assert result.exit_code == 1 and "UTF-8" in result.output


# ---------------------------------------------------------------- search --exit-code


def test_exit_code_is_opt_in_and_ignores_pins_and_the_summary(store, memory):
    obs = memory.log("flaky socket test").entity["id"]
    memory.pin("observation", obs)
    memory.log("socket timeout on the CI runner")
    assert invoke("--store", store, "search", "nothing-like-it").exit_code == 0
    missed = invoke("--store", store, "search", "nothing-like-it", "--exit-code", "--json")
    assert missed.exit_code == 1
    assert json.loads(missed.stdout)["pins"]  # the pin is still shown; it does not count
    hit = invoke("--store", store, "search", "socket", "--exit-code")
    assert hit.exit_code == 0
    pinned_only = invoke("--store", store, "search", "flaky", "--exit-code")
    assert pinned_only.exit_code == 1  # a pinned entry is shown with the pins, not a candidate
    help_text = invoke("search", "--help").output
    assert "--exit-code" in help_text and "agents read as success" in " ".join(help_text.split())


# ---------------------------------------------------------------- progress


class Terminal(io.StringIO):
    def isatty(self):
        return True


def test_progress_follows_the_options(monkeypatch):
    import click

    from kindling.cli.common import progress_bars

    cases = [
        # (stderr is a terminal, --progress, -q, --json) -> drawn
        ((True, None, False, False), True),
        ((False, None, False, False), False),
        ((False, True, False, False), True),
        ((True, False, False, False), False),
        ((True, None, True, False), False),
        ((True, True, False, True), False),
    ]
    for (tty, asked, quiet, json_), drawn in cases:
        monkeypatch.setattr(sys, "stderr", Terminal() if tty else io.StringIO())
        ctx = click.Context(cli, obj={"progress": asked, "quiet": quiet})
        with progress_bars(ctx, json_=json_) as progress:
            if progress is not None:
                progress("Checking", 3)(3)
        assert (progress is not None) == drawn, (tty, asked, quiet, json_)
        assert ("Checking" in sys.stderr.getvalue()) == drawn


def test_bars_end_each_stage_with_its_total():
    from kindling.progress import Bars

    out = Terminal()
    bars = Bars(out, terminal=True)
    step = bars("Checking", 4)
    for _ in range(4):
        step(1)
    bars("Writing", 0)
    bars.close()
    text = out.getvalue()
    assert "4/4 100%" in text and "Writing" in text and text.endswith("\n")
    plain = io.StringIO()
    piped = Bars(plain, terminal=False)
    piped("Checking", 2)(2)
    piped.close()
    assert plain.getvalue() == "Checking".ljust(14) + " [" + "#" * 24 + "] 2/2 100%\n"


class Recorder:
    def __init__(self):
        self.stages: dict[str, list[int]] = {}

    def __call__(self, label, total):
        steps = self.stages.setdefault(label, [total, 0])
        return lambda n: steps.__setitem__(1, steps[1] + n)


def test_fsck_and_browse_report_progress(memory, tmp_path):
    for i in range(30):
        memory.log(f"entry {i}")
    recorder = Recorder()
    report = memory.fsck(progress=recorder)
    assert report.checked == 30
    total, done = recorder.stages["Checking"]
    assert total == done and total >= 1
    from kindling.browse import write_page

    pages = Recorder()
    write_page(memory, tmp_path / "page.html", pages)
    assert pages.stages["Reading"][0] == pages.stages["Reading"][1] == 5
    assert pages.stages["Writing page"] == [1, 1]


def test_piped_progress_only_when_asked(memory, store_dir):
    memory.log("entry")
    quiet = run_kindling("--store", str(store_dir), "fsck")
    assert quiet.returncode == 0 and quiet.stderr == b""
    asked = run_kindling("--store", str(store_dir), "fsck", "--progress")
    assert b"Checking" in asked.stderr
    assert run_kindling("--store", str(store_dir), "fsck", "--progress", "--json").stderr == b""
    out = str(store_dir.parent / "b.json")
    done = run_kindling("--store", str(store_dir), "export", "-o", out, "-q")
    assert done.returncode == 0 and done.stderr == b""


# ---------------------------------------------------------------- import errors


@pytest.fixture
def bad_bundle(tmp_path, memory, store_dir):
    memory.log("fine")
    path = tmp_path / "bundle.json"
    assert run_kindling("--store", str(store_dir), "export", "-o", str(path)).returncode == 0
    bundle = json.loads(path.read_text())
    bundle["dataset"]["observations"] += [{"id": "bad1", "content": 5}, {"id": "bad2"}]
    path.write_text(json.dumps(bundle))
    return str(path)


def test_import_errors_are_one_line(store, bad_bundle):
    result = invoke("--store", store, "import", bad_bundle)
    assert result.exit_code == 1
    lines = result.output.strip().splitlines()
    assert len(lines) == 1
    assert "invalid bundle" in lines[0] and "bad1" in lines[0] and "-v or --json" in lines[0]


def test_import_lists_every_problem_with_v_or_json(store, bad_bundle):
    verbose = invoke("--store", store, "import", bad_bundle, "-v")
    assert verbose.exit_code == 1
    assert len(verbose.output.strip().splitlines()) > 5 and "bad2" in verbose.output
    as_json = invoke("--store", store, "import", bad_bundle, "--json")
    assert as_json.exit_code == 1
    report = json.loads(as_json.stdout)
    assert report["imported"] is False and len(report["problems"]) > 5


# ---------------------------------------------------------------- completion


def complete(store: str, words: str) -> list[str]:
    env = {
        **os.environ,
        "_KINDLING_COMPLETE": "bash_complete",
        "COMP_WORDS": f"kindling --store {store} {words}",
        "COMP_CWORD": str(len(words.split(" ")) + 2),
    }
    proc = subprocess.run(
        [sys.executable, "-c", "from kindling.cli import main; main()"],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and proc.stderr == ""
    return [line.split(",", 1)[1] for line in proc.stdout.splitlines() if "," in line]


def test_ids_complete_from_the_index(store, memory):
    obs = memory.log("a").entity["id"]
    cap = memory.open_capsule("b").entity["id"]
    pin = memory.pin("observation", obs).entity["id"]
    memory.sync()
    assert set(complete(store, "show ")) >= {obs, cap, pin}
    assert complete(store, f"show {obs[:4]}") == [obs]
    assert complete(store, "unpin ") == [pin]
    assert complete(store, "capsule close ") == [cap]
    assert complete(store, "pin observation ") == [obs]


def test_completion_never_fails_loudly(tmp_path):
    assert complete(str(tmp_path / "nowhere"), "show ") == []
    assert complete(str(tmp_path), "forget " + "x" * 500) == []
