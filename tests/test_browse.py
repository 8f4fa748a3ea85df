"""`kindling browse`: the page's escaping, self-containment, and its behaviour in a real browser."""

from __future__ import annotations

import json
import os
import re
import shutil
import tempfile
import webbrowser

import pytest

from kindling.browse import render_page, script_json

XSS = "</script><script>alert(1)</script> <img src=x onerror=alert(2)> & \u2028 \u2029 end"


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


def _fill(memory):
    """A small store with a capsule, its summary, a pin, a redacted item and hostile content."""
    scope = {"sessionId": "s1", "repoId": "acme"}
    cap = memory.open_capsule("fix the login loop", scope=scope).entity
    xss = memory.log(XSS, kind="error", scope=scope).entity
    diff = memory.log("--- a/auth.ts\n+++ b/auth.ts\n-old\n+new", kind="file_diff", scope=scope)
    memory.log("npm test -- auth: 42 passed", kind="command", scope=scope)
    secret = memory.log("something to forget later", scope={"repoId": "acme"}).entity
    memory.forget(secret["id"])
    memory.log("unrelated note about the rate limiter", scope={"repoId": "acme"})
    memory.close_capsule(cap["id"], summary="exp is in seconds", evidence=[diff.entity["id"]])
    memory.pin("observation", xss["id"], note="root cause <b>bold?</b>")
    return {"observations": 5, "redacted": 1, "capsules": 1, "summaries": 1, "pins": 1}


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
    assert "innerHTML" not in html and "document.write" not in html
    data = re.search(r'<script type="application/json"[^>]*>(.*?)</script>', html, re.S)
    entities = json.loads(data.group(1))
    assert len(entities["observations"]) == 5


def test_page_renders_from_collected_data_only():
    empty = {
        "store": "s",
        "generatedAt": 0,
        "problems": [],
        "observations": [],
        "capsules": [],
        "summaries": [],
        "pins": [],
    }
    html = render_page(empty)
    assert "__DATA__" not in html and "__JS__" not in html and "__CSP__" not in html


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


# ---------------------------------------------------------------- in a real headless browser

CHROME_ARGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--no-first-run",
)


def _browser_paths():
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


@pytest.fixture
def loaded(driver, page):
    path, counts = page
    driver.get_log("browser")
    driver.get_log("performance")
    driver.get(path.as_uri())
    return driver, counts


def _visible(driver, selector):
    from selenium.webdriver.common.by import By

    return [e for e in driver.find_elements(By.CSS_SELECTOR, selector) if e.is_displayed()]


def _text(driver, element_id):
    from selenium.webdriver.common.by import By

    return driver.find_element(By.ID, element_id).text


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
    assert _text(driver, "count-observations") == str(counts["observations"])
    assert _text(driver, "count-redacted") == str(counts["redacted"])
    assert _text(driver, "count-capsules") == str(counts["capsules"])
    assert _text(driver, "count-summaries") == str(counts["summaries"])
    assert _text(driver, "count-pins") == str(counts["pins"])
    assert len(_visible(driver, "#observations > li.entity")) == counts["observations"]
    # Pins come first on the page.
    from selenium.webdriver.common.by import By

    sections = [h.text for h in driver.find_elements(By.CSS_SELECTOR, "#lists h2")]
    assert sections[0] == "Pins"
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
    from selenium.webdriver.common.by import By

    box = driver.find_element(By.ID, "search")
    box.send_keys("rate limiter")
    shown = _visible(driver, "#observations > li.entity")
    assert len(shown) == 1 and "rate limiter" in shown[0].text
    assert _visible(driver, "#pins > li.entity") == []
    assert "match" in _text(driver, "match-count")
    box.clear()
    box.send_keys("NPM TEST")  # case-insensitive, and it finds the capsule holding it
    assert len(_visible(driver, "#observations > li.entity")) == 1
    assert len(_visible(driver, "#capsules > details.capsule")) == 1
    box.clear()
    box.send_keys(" ")
    assert len(_visible(driver, "#observations > li.entity")) == counts["observations"]


@pytest.mark.browser
def test_clicking_an_entity_shows_its_json(loaded):
    driver, _ = loaded
    item = _visible(driver, "#summaries > li.entity")[0]
    item.click()
    shown = json.loads(_text(driver, "detail-json"))
    assert shown["content"] == "exp is in seconds"
    assert _text(driver, "detail-title").startswith("summary sum_")


def test_unreadable_files_are_listed_not_fatal(memory, run, store_dir, tmp_path):
    _fill(memory)
    bad = store_dir / "objects" / "observations" / "ab" / "not-an-entity.json"
    bad.parent.mkdir(parents=True, exist_ok=True)
    bad.write_text("{broken")
    out = tmp_path / "p.html"
    assert run("browse", "-o", str(out), "--no-open").exit_code == 0
    html = out.read_text(encoding="utf-8")
    data = json.loads(
        re.search(r'<script type="application/json"[^>]*>(.*?)</script>', html, re.S).group(1)
    )
    assert [p["path"] for p in data["problems"]] == [str(bad)]
    assert len(data["observations"]) == 5
