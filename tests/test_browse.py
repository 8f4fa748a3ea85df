"""`kindling browse`: the page's data and escaping, its atomic write, and the page in a browser."""

from __future__ import annotations

import importlib.util
import json
import os
import re
import tempfile
import webbrowser

import pytest
from conftest import REPO_ROOT

from kindling import browse
from kindling.agents.hooks import record_for as capture
from kindling.browse import files_of, pack_observations, render_page, script_json, tool_of
from kindling.memory import Memory
from kindling.store import Store

XSS = "</script><script>alert(1)</script> <img src=x onerror=alert(2)> & \u2028 \u2029 end"
LONG_OUTPUT = "\n".join(f"line {n:02d} of the test run" for n in range(1, 51))


@pytest.mark.parametrize(
    "value",
    [
        XSS,
        {"content": "</SCRIPT>", "nested": ["<!--", "-->", "<![CDATA[", "]]>"]},
        "plain \u00e9 text",
    ],
)
def test_script_json_leaves_nothing_that_can_end_a_script(value):
    text = script_json(value)
    assert not re.search("[<>&\u2028\u2029]", text)
    assert json.loads(text) == value


def _hook(memory, scope, tool, tool_input, response):
    """Record what the PostToolUse hook records for one tool call."""
    payload = {
        "session_id": scope["sessionId"],
        "cwd": "/work/acme",
        "tool_name": tool,
        "tool_input": tool_input,
        "tool_response": response,
    }
    kind, content, provenance, _ = capture("PostToolUse", payload)
    return memory.log(content, kind=kind, scope=scope, provenance=provenance).entity


def _fill(memory):
    """A small store: a capsule with a summary, hook captures, a pin, a redacted item, XSS."""
    scope = {"sessionId": "s1", "repoId": "acme"}
    cap = memory.open_capsule("fix the login loop", scope=scope).entity
    xss = memory.log(XSS, kind="error", scope=scope).entity
    diff = _hook(
        memory,
        scope,
        "Edit",
        {"file_path": "/work/acme/src/auth.ts", "old_string": "old\n", "new_string": "new\n"},
        {},
    )
    run = _hook(
        memory,
        scope,
        "Bash",
        {"command": "npm test -- auth"},
        {"stdout": LONG_OUTPUT + "\n42 passed"},
    )
    secret = memory.log("something to forget later", scope={"repoId": "acme"}).entity
    memory.forget(secret["id"])
    memory.log("unrelated note about the rate limiter", scope={"repoId": "acme", "sessionId": "s2"})
    memory.close_capsule(cap["id"], summary="exp is in seconds", evidence=[diff["id"]])
    memory.pin("observation", xss["id"], note="root cause <b>bold?</b>")
    return {
        "observations": 5,
        "redacted": 1,
        "capsules": 1,
        "summaries": 1,
        "pins": 1,
        "capsule": cap["id"],
        "members": [xss["id"], diff["id"], run["id"]],
    }


def _page_data(html: str) -> dict:
    block = re.search(r'<script type="application/json"[^>]*>(.*?)</script>', html, re.S)
    return json.loads(block.group(1))


@pytest.fixture
def page(memory, run, tmp_path):
    counts = _fill(memory)
    out = tmp_path / "memory.html"
    result = run("browse", "--output", str(out), "--no-open")
    assert result.exit_code == 0, result.output
    assert result.output.strip() == str(out)
    return out, counts


def test_page_is_one_offline_file(page):
    path, _ = page
    html = path.read_text(encoding="utf-8")
    assert not re.search(r"(?i)https?://|//[a-z0-9.-]+\.[a-z]{2,}/", html)
    assert not re.search(r"(?i)<(link|iframe|object|embed|img)\b", html)
    assert not re.search(r"(?i)<script[^>]*\bsrc=", html)
    assert len(re.findall(r"(?i)<script\b", html)) == 2
    assert len(re.findall(r"(?i)</script", html)) == 2
    assert "Content-Security-Policy" in html and "default-src 'none'" in html
    assert not re.search(r"innerHTML|outerHTML|insertAdjacentHTML|document\.write|eval\(", html)
    assert not re.search(r"(?i)<[a-z]+[^>]*\son[a-z]+=", html)  # no inline event handlers
    data = _page_data(html)
    assert len(data["observations"]["columns"]["id"]) == 5


def test_observations_travel_as_columns_and_come_back_whole(memory):
    _fill(memory)
    stored = memory.list("observations", limit=None)
    packed = pack_observations(stored)
    assert browse.unpack_observations(packed) == sorted(stored, key=lambda o: (-o["ts"], o["id"]))
    assert set(packed["tools"]) == {"Edit", "Bash"}
    assert packed["files"] == ["src/auth.ts"]
    assert len(packed["scopes"]) == 3  # shared, not repeated per observation


def test_tools_and_files_come_from_provenance_and_diff_headers():
    assert tool_of({"provenance": {"tool": "Bash"}}) == "Bash"
    assert tool_of({"provenance": {"toolName": "Grep"}}) == "Grep"
    assert tool_of({"provenance": {"tool": 3}}) is None
    assert tool_of({"provenance": {}}) is None
    diff = "--- a/src/x.py\n+++ b/src/y.py\n@@ -1 +1 @@\n-a\n+b\n--- not a header\n"
    assert files_of({"content": diff, "provenance": {"file": "src/x.py"}}) == [
        "src/x.py",
        "src/y.py",
    ]
    assert files_of({"content": "--- /dev/null\n+++ b/new.txt\n", "provenance": {}}) == ["new.txt"]
    git = "diff --git a/one.c b/two.c\nindex 1..2\n"
    assert files_of({"content": git, "provenance": {"files": ["a", 5, "b"]}}) == [
        "a",
        "b",
        "one.c",
        "two.c",
    ]
    assert files_of({"content": "--- just a rule\nmore text", "provenance": {}}) == []


def test_page_renders_from_collected_data_only():
    empty = {
        "store": "s",
        "generatedAt": 0,
        "problems": [],
        "observations": pack_observations([]),
        "capsules": [],
        "summaries": [],
        "pins": [],
    }
    html = render_page(empty)
    assert "__DATA__" not in html and "__JS__" not in html and "__CSP__" not in html


def test_a_failed_write_leaves_the_old_page_and_no_temp_file(memory, run, tmp_path, monkeypatch):
    _fill(memory)
    out = tmp_path / "site" / "memory.html"
    out.parent.mkdir()
    out.write_text("the old page")

    def refuse(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(browse.os, "replace", refuse)
    result = run("browse", "-o", str(out), "--no-open")
    assert result.exit_code == 1
    assert result.output.strip() == f"Error: cannot write {out}: No space left on device"
    assert out.read_text() == "the old page"
    assert os.listdir(out.parent) == ["memory.html"]
    monkeypatch.undo()
    assert run("browse", "-o", str(out), "--no-open").exit_code == 0
    assert len(_page_data(out.read_text(encoding="utf-8"))["observations"]["columns"]["id"]) == 5
    assert os.listdir(out.parent) == ["memory.html"]


def test_an_output_in_a_missing_folder_is_a_one_line_error(memory, run, tmp_path):
    result = run("browse", "-o", str(tmp_path / "nowhere" / "p.html"), "--no-open")
    assert result.exit_code == 1
    assert result.output == (
        f"Error: cannot write {tmp_path / 'nowhere' / 'p.html'}: "
        f"folder {tmp_path / 'nowhere'} does not exist\n"
    )
    assert not (tmp_path / "nowhere").exists()


def test_an_empty_output_path_is_a_one_line_error(memory, run):
    result = run("browse", "-o", "", "--no-open")
    assert (result.exit_code, result.output) == (1, "Error: the output path is empty\n")


def test_without_output_writes_a_temp_file(memory, run, tmp_path, monkeypatch):
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
    monkeypatch.setattr(webbrowser, "open", lambda *a, **k: pytest.fail("opened a browser"))
    _fill(memory)
    result = run("browse")
    assert result.exit_code == 0, result.output
    path = result.output.strip()
    assert os.path.dirname(path) == str(tmp_path)
    assert path.endswith(".html") and os.path.getsize(path) > 1000


def test_open_without_a_graphical_browser_says_so(memory, run, tmp_path, monkeypatch):
    monkeypatch.delenv("DISPLAY", raising=False)
    monkeypatch.delenv("WAYLAND_DISPLAY", raising=False)
    monkeypatch.setattr(webbrowser, "open", lambda *a, **k: pytest.fail("opened a browser"))
    result = run("browse", "--output", str(tmp_path / "p.html"), "--open")
    assert result.exit_code == 0
    assert "No graphical browser" in result.output


def test_unreadable_files_are_listed_not_fatal(memory, run, store_dir, tmp_path):
    _fill(memory)
    bad = store_dir / "objects" / "observations" / "ab" / "not-an-entity.json"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text("{broken")
    out = tmp_path / "p.html"
    assert run("browse", "-o", str(out), "--no-open").exit_code == 0
    data = _page_data(out.read_text(encoding="utf-8"))
    assert [p["path"] for p in data["problems"]] == [str(bad)]
    assert len(data["observations"]["columns"]["id"]) == 5


def load_bench():
    """bench/bench_browse.py, whose store generator the large-store test shares."""
    spec = importlib.util.spec_from_file_location(
        "bench_browse", REPO_ROOT / "bench" / "bench_browse.py"
    )
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


# ---------------------------------------------------------------- in a real headless browser

CHROME_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
    "--window-size=1400,1000",
)


def _browser_paths():
    import shutil

    binary = next(
        (p for p in map(shutil.which, ("chromium", "chromium-browser", "google-chrome")) if p),
        None,
    )
    return binary, shutil.which("chromedriver")


@pytest.fixture(scope="module")
def driver(tmp_path_factory):
    binary, chromedriver = _browser_paths()
    if not (binary and chromedriver):
        reason = "needs chromium and chromedriver (apt-get install chromium chromium-driver)"
        if os.environ.get("REQUIRE_BROWSER_TESTS"):
            pytest.fail(reason + "; REQUIRE_BROWSER_TESTS is set")
        pytest.skip(reason)
    webdriver = pytest.importorskip("selenium.webdriver")
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    for arg in CHROME_ARGS:
        options.add_argument(arg)
    options.add_argument(f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}")
    options.binary_location = binary
    options.set_capability("goog:loggingPrefs", {"browser": "ALL", "performance": "ALL"})
    browser = webdriver.Chrome(options=options, service=Service(executable_path=chromedriver))
    yield browser
    browser.quit()


def _open(driver, path):
    """Load the page and wait for its script to finish its first render."""
    from selenium.webdriver.support.ui import WebDriverWait

    driver.get_log("browser")
    driver.get_log("performance")
    driver.get(path.as_uri())
    # driver.get can return before a large file:// page has run its script.
    WebDriverWait(driver, 60, poll_frequency=0.01).until(
        lambda d: d.execute_script(
            "return document.readyState === 'complete' && !!document.body.dataset.loadMs"
        )
    )
    return driver


@pytest.fixture
def loaded(driver, page):
    path, counts = page
    return _open(driver, path), counts


def _find(driver, selector, within=None):
    from selenium.webdriver.common.by import By

    return (within or driver).find_elements(By.CSS_SELECTOR, selector)


def _visible(driver, selector):
    return [e for e in _find(driver, selector) if e.is_displayed()]


def _text(driver, element_id):
    from selenium.webdriver.common.by import By

    return driver.find_element(By.ID, element_id).text


def _filtered(driver, act) -> float:
    """Do `act`, wait until the page has applied every filter it asked for; elapsed ms."""
    import time

    from selenium.webdriver.support.ui import WebDriverWait

    state = "return [document.body.dataset.filterRuns, document.body.dataset.busy]"
    before = driver.execute_script(state)[0]
    start = time.perf_counter()
    act()
    WebDriverWait(driver, 60, poll_frequency=0.01).until(
        lambda d: (lambda s: s[0] != before and s[1] == "0")(d.execute_script(state))
    )
    return (time.perf_counter() - start) * 1000


def _set(driver, element_id, value):
    """Type into a filter box, or choose the option whose label starts with `value`."""
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    node = driver.find_element(By.ID, element_id)
    if node.tag_name == "select":
        labels = driver.execute_script(
            "return Array.from(arguments[0].options).map(function (o) { return o.text; })", node
        )
        index = next(i for i, label in enumerate(labels) if label.startswith(value))

    def act():
        if node.tag_name == "select":
            Select(node).select_by_index(index)
        else:
            node.clear()
            node.send_keys(value)

    return _filtered(driver, act)


def _clear(driver):
    from selenium.webdriver.common.by import By

    _filtered(driver, driver.find_element(By.ID, "f-clear").click)


@pytest.mark.browser
def test_page_loads_without_errors_or_requests(loaded):
    driver, _ = loaded
    errors = [e for e in driver.get_log("browser") if e["level"] in ("SEVERE", "WARNING")]
    assert errors == []
    urls = []
    for entry in driver.get_log("performance"):
        message = json.loads(entry["message"])["message"]
        if message["method"] == "Network.requestWillBeSent":
            urls.append(message["params"]["request"]["url"])
    assert not [u for u in urls if re.match(r"(?i)(https?|wss?|ftp)://", u)]


@pytest.mark.browser
def test_counts_and_sections(loaded):
    driver, counts = loaded
    for name in ("observations", "redacted", "capsules", "summaries", "pins"):
        assert _text(driver, f"count-{name}") == str(counts[name])
    assert len(_visible(driver, "#observations > li.entity")) == counts["observations"]
    sections = [h.text for h in _find(driver, "#lists h2")]
    assert sections[0].startswith("Pins")  # pins come first on the page
    redacted = _visible(driver, "#observations > li.redacted")
    assert len(redacted) == 1 and "[redacted]" in redacted[0].text


@pytest.mark.browser
def test_hostile_content_shows_as_text(loaded):
    driver, _ = loaded
    from selenium.common.exceptions import NoAlertPresentException
    from selenium.webdriver.common.by import By

    with pytest.raises(NoAlertPresentException):
        driver.switch_to.alert.text  # noqa: B018
    assert len(driver.find_elements(By.TAG_NAME, "script")) == 2
    assert driver.find_elements(By.TAG_NAME, "img") == []
    # The only <b> elements are the page's own counters, none from the pin's note.
    assert all(
        b.get_attribute("id").startswith("count-") for b in driver.find_elements(By.TAG_NAME, "b")
    )
    pin = _visible(driver, "#pins > li.entity")[0]
    assert "</script><script>alert(1)</script>" in pin.text
    assert "root cause <b>bold?</b>" in pin.text


@pytest.mark.browser
def test_search_box_filters(loaded):
    driver, counts = loaded
    _set(driver, "search", "rate limiter")
    shown = _visible(driver, "#observations > li.entity")
    assert len(shown) == 1 and "rate limiter" in shown[0].text
    assert _visible(driver, "#pins > li.entity") == []
    assert _text(driver, "match-count") == "1 of 8 match"
    _set(driver, "search", "NPM TEST")  # case-insensitive, and it finds the capsule holding it
    assert len(_visible(driver, "#observations > li.entity")) == 1
    assert len(_visible(driver, "#capsules > li.entity")) == 1
    _set(driver, "search", " ")
    assert len(_visible(driver, "#observations > li.entity")) == counts["observations"]


@pytest.mark.browser
def test_filters_by_kind_tool_file_and_session(loaded):
    driver, counts = loaded

    def kinds():
        return sorted(e.text for e in _visible(driver, "#observations > li .badge.kind"))

    _set(driver, "f-kind", "file_diff")
    assert kinds() == ["file_diff"]
    _clear(driver)
    _set(driver, "f-tool", "Bash")
    assert kinds() == ["command"]
    assert _text(driver, "shown-observations") == "1 of 5"
    _clear(driver)
    _set(driver, "f-file", "AUTH.ts")
    shown = _visible(driver, "#observations > li.entity")
    assert len(shown) == 1 and "src/auth.ts" in shown[0].text
    assert len(_visible(driver, "#capsules > li.entity")) == 1  # the capsule holding the edit
    _clear(driver)
    _set(driver, "f-session", "s2")
    shown = _visible(driver, "#observations > li.entity")
    assert len(shown) == 1 and "rate limiter" in shown[0].text
    _set(driver, "f-session", "s1")
    assert len(_visible(driver, "#observations > li.entity")) == 3
    _clear(driver)
    assert len(_visible(driver, "#observations > li.entity")) == counts["observations"]


@pytest.mark.browser
def test_long_output_expands_with_its_newlines(loaded):
    driver, _ = loaded
    card = next(e for e in _visible(driver, "#observations > li.entity") if "npm test" in e.text)
    preview = _find(driver, "pre.text", card)[0].text
    assert preview.splitlines()[:3] == [
        "Bash: npm test -- auth -> exit 0",
        "line 01 of the test run",
        "line 02 of the test run",
    ]
    assert len(preview.splitlines()) == 8  # the first lines, not the whole output
    assert "line 50" not in preview and "42 passed" not in preview
    toggle = _find(driver, "button.expand", card)[0]
    full_text = f"Bash: npm test -- auth -> exit 0\n{LONG_OUTPUT}\n42 passed"
    assert toggle.text == f"Show all 52 lines ({len(full_text):,} characters)"
    toggle.click()
    full = _find(driver, "pre.text", card)[0].text
    first = "Bash: npm test -- auth -> exit 0"
    assert full.splitlines() == [first, *LONG_OUTPUT.splitlines(), "42 passed"]
    assert toggle.text == "Collapse"
    assert "selected" not in card.get_attribute("class")  # expanding does not select
    toggle.click()
    assert "line 50" not in _find(driver, "pre.text", card)[0].text


@pytest.mark.browser
def test_detail_pane_shows_text_with_real_newlines(loaded):
    driver, _ = loaded
    card = next(e for e in _visible(driver, "#observations > li.entity") if "npm test" in e.text)
    card.click()
    assert "selected" in card.get_attribute("class")
    body = _text(driver, "detail-body")
    content = body.split("Content (", 1)[1]  # provenance.payload above it is JSON
    assert "line 50 of the test run\n42 passed" in content and "\\n" not in content
    assert "provenance.tool\nBash" in body
    raw = json.loads(driver.find_element("id", "detail-json").get_attribute("textContent"))
    assert raw["provenance"]["command"] == "npm test -- auth"
    _find(driver, "#detail-body button.link")[0].click()  # its capsule
    assert _text(driver, "detail-title").startswith("capsule cap_")
    assert "selected" not in card.get_attribute("class")


@pytest.mark.browser
def test_diffs_are_styled_by_line(loaded):
    driver, _ = loaded
    card = next(e for e in _visible(driver, "#observations > li.entity") if "auth.ts" in e.text)
    lines = [(e.get_attribute("class").split()[-1], e.text) for e in _find(driver, ".line", card)]
    assert lines == [
        ("meta", "--- a/src/auth.ts"),
        ("meta", "+++ b/src/auth.ts"),
        ("hunk", "@@ -1 +1 @@"),
        ("del", "-old"),
        ("add", "+new"),
    ]
    add = _find(driver, ".line.add", card)[0]
    assert add.value_of_css_property("background-color") != "rgba(0, 0, 0, 0)"


@pytest.mark.browser
def test_capsule_view_shows_summary_and_observations_in_order(loaded):
    driver, counts = loaded
    _visible(driver, "#capsules > li.entity")[0].click()
    assert _text(driver, "detail-title") == f"capsule {counts['capsule']}"
    summary = _find(driver, "#detail-body li.summary")
    assert len(summary) == 1 and "exp is in seconds" in summary[0].text
    members = [e.get_attribute("data-id") for e in _find(driver, "#detail-body .members > li")]
    assert members == counts["members"]


@pytest.mark.browser
def test_clicking_a_summary_shows_it(loaded):
    driver, _ = loaded
    _visible(driver, "#summaries > li.entity")[0].click()
    shown = json.loads(driver.find_element("id", "detail-json").get_attribute("textContent"))
    assert shown["content"] == "exp is in seconds"
    assert _text(driver, "detail-title").startswith("summary sum_")
    _find(driver, "#detail-body button.link")[0].click()
    assert _text(driver, "detail-title").startswith("capsule cap_")
    assert "exp is in seconds" in _text(driver, "detail-body")


@pytest.mark.browser
def test_an_empty_store_says_so(driver, memory, tmp_path):
    out = browse.write_page(memory, tmp_path / "empty.html")
    _open(driver, out)
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
    assert _text(driver, "count-observations") == "0"
    assert _text(driver, "observations") == "No observations."
    _set(driver, "search", "anything")
    assert _text(driver, "observations") == "No observations match."
    assert _text(driver, "match-count") == "0 of 0 match"


@pytest.mark.browser
def test_crafted_ids_and_names_are_plain_keys(driver, store_dir, tmp_path):
    store = Store(store_dir)
    names = ("constructor", "toString", "hasOwnProperty", "valueOf")
    for n, name in enumerate(names):
        store.write(
            "observations",
            {
                "id": name,
                "kind": "command",
                "content": f"ran {name}",
                "ts": 1000 + n,
                "provenance": {"tool": "__proto__", "file": "constructor", "__proto__": {"x": 1}},
                "scopeIds": {"sessionId": "__proto__" if n % 2 else "constructor"},
                "redacted": False,
            },
        )
    store.write(
        "capsules",
        {
            "id": "prototype",
            "type": "session",
            "intent": "crafted",
            "status": "open",
            "openedAt": 999,
            "scopeIds": {"sessionId": "__proto__"},
            "observationIds": list(names),
        },
    )
    store.write(
        "pins",
        {
            "id": "isPrototypeOf",
            "targetType": "observation",
            "targetId": "constructor",
            "reason": None,
            "createdAt": 5,
            "expiresAt": None,
            "scopeIds": {},
        },
    )
    out = tmp_path / "crafted.html"
    with Memory(store_dir) as memory:
        browse.write_page(memory, out)
    _open(driver, out)
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
    assert _text(driver, "count-observations") == "4"
    assert len(_visible(driver, "#observations > li.entity")) == 4
    _set(driver, "f-session", "__proto__")
    assert sorted(e.get_attribute("data-id") for e in _visible(driver, "#observations > li")) == [
        "toString",
        "valueOf",
    ]
    _set(driver, "f-tool", "__proto__")
    _set(driver, "f-file", "constructor")
    assert len(_visible(driver, "#observations > li.entity")) == 2
    _visible(driver, "#capsules > li.entity")[0].click()
    members = [e.get_attribute("data-id") for e in _find(driver, "#detail-body .members > li")]
    assert members == list(names)
    assert _visible(driver, "#pins > li.entity") == []  # its target is in another session
    _clear(driver)
    _visible(driver, "#pins > li.entity")[0].click()
    assert "ran constructor" in _text(driver, "detail-body")


# ---------------------------------------------------------------- 10,000 observations

LARGE = 10_000


@pytest.fixture(scope="module")
def large_page(tmp_path_factory):
    """A generated store of LARGE hook-like observations, its page and its observations."""
    bench = load_bench()
    work = tmp_path_factory.mktemp("large")
    counts = bench.build_store(work / ".kindling", LARGE)
    out = work / "large.html"
    with Memory(work / ".kindling") as memory:
        browse.write_page(memory, out)
        observations = memory.list("observations", limit=None)
    return out, counts, observations


def _haystack(o: dict) -> str:
    """Roughly what the page searches for an observation (for alphabetic words, exactly)."""
    scope = " ".join(f"{k}={v}" for k, v in sorted(o["scopeIds"].items()))
    parts = [
        o["id"],
        o["kind"],
        tool_of(o) or "",
        " ".join(files_of(o)),
        scope,
        o["content"],
        json.dumps(o["provenance"]),
    ]
    return "\n".join(parts).lower()


@pytest.mark.slow
@pytest.mark.browser
def test_large_store_loads_lazily_and_filters_correctly(driver, large_page):
    import time

    path, counts, observations = large_page
    start = time.perf_counter()
    _open(driver, path)
    wall = (time.perf_counter() - start) * 1000
    load_event, in_script = driver.execute_script(
        "return [performance.getEntriesByType('navigation')[0].loadEventEnd,"
        " Number(document.body.dataset.loadMs)]"
    )
    print(
        f"\n{LARGE:,} observations, page {path.stat().st_size / 2**20:.1f} MiB: load event "
        f"{load_event:.0f} ms (page script {in_script:.0f} ms, driver.get {wall:.0f} ms)"
    )
    assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
    assert _text(driver, "count-observations") == str(LARGE)
    assert _text(driver, "count-capsules") == str(counts["capsules"])
    rendered = _find(driver, "#observations > li.entity")
    assert 0 < len(rendered) < LARGE  # only the first pages are on the page
    more = _find(driver, "#observations ~ button.more")[0]
    assert f"({LARGE - len(rendered):,} not shown)" in more.text
    # Scrolling to the end of the list brings the next page.
    from selenium.webdriver.support.ui import WebDriverWait

    driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", more)
    WebDriverWait(driver, 10, poll_frequency=0.05).until(
        lambda d: len(_find(d, "#observations > li.entity")) > len(rendered)
    )
    driver.execute_script("window.scrollTo(0, 0)")

    def expect(test):
        n = sum(1 for o in observations if test(o))
        return f"{n:,} of {LARGE:,}"

    words = ("token", "expiry")
    cases = [
        ("search", "Token Expiry", lambda o: all(w in _haystack(o) for w in words)),
        ("search", " ", None),
        ("f-kind", "file_diff", lambda o: o["kind"] == "file_diff"),
        (
            "f-file",
            "auth/",
            lambda o: o["kind"] == "file_diff" and any("auth/" in f for f in files_of(o)),
        ),
        ("f-clear", None, None),
        ("f-tool", "Bash", lambda o: tool_of(o) == "Bash"),
        (
            "f-session",
            "session-0003",
            lambda o: tool_of(o) == "Bash" and o["scopeIds"]["sessionId"] == "session-0003",
        ),
    ]
    for element, value, test in cases:
        if element == "f-clear":
            _clear(driver)
            continue
        elapsed = _set(driver, element, value)
        in_page = driver.execute_script("return Number(document.body.dataset.filterMs)")
        print(
            f"filter {element}={value!r}: {elapsed:.0f} ms from the input to the final list "
            f"(typing debounce included), {in_page:.0f} ms in the page"
        )
        shown = _text(driver, "shown-observations")
        assert shown == (expect(test) if test else f"{LARGE:,}"), (element, value)
        cards = _find(driver, "#observations > li.entity")
        assert cards and len(cards) <= 50  # one page
    sample = _find(driver, "#observations > li.entity")[0]
    assert "Bash" in sample.text and "session-0003" in sample.text
