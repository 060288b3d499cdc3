"""The web console in a real headless Chromium, against a real node and a real executor:
every page shows what the node knows, a dead letter is fixed by editing its payload (diff
first, then confirm) and followed to success on the Task page, a bulk replay is paused,
resumed and watched to its end. Against a stand-in endpoint: the overview draws the
statistics as GET /api/stats documents them, and a viewer's action shows the 403's message.

Needs Debian's chromium and chromium-driver (deploy/local/bootstrap.sh installs them): the
tests skip without them, except under CI=true, where they fail. Each page is saved as a PNG;
TASKRING_UPDATE_SCREENSHOTS=1 writes them to docs/screenshots/ (the README shows them).
"""
from __future__ import annotations

import os
import shutil
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import TypeVar

import pytest
from prometheus_client import CollectorRegistry

from dispatcher.admin import routes as rt
from dispatcher.admin.console.routes import console_routes
from dispatcher.admin.server import AdminServer
from dispatcher.auth.identity import Identity, Role
from harness.processes import NodeProcess
from harness.wait import wait_until
from taskring import Client, TaskSpec, TaskState
from taskring.graph import Graph
from tests.integration.conftest import PARTITIONS
from tests.integration.payments import NS, charge, dead_letter

pytestmark = pytest.mark.integration

T = TypeVar("T")

CHROMIUM, CHROMEDRIVER = "/usr/bin/chromium", "/usr/bin/chromedriver"
DOCS_SCREENSHOTS = Path(__file__).resolve().parents[2] / "docs" / "screenshots"
UPDATE_SCREENSHOTS = os.environ.get("TASKRING_UPDATE_SCREENSHOTS") == "1"
"""The README's screenshots are rewritten only when asked (TASKRING_UPDATE_SCREENSHOTS=1), so a
test run leaves the work tree as it was; otherwise they go to the test's own directory."""
MAX_SCREENSHOT_BYTES = 300_000
TOKEN = "console-test-token"
WAIT_S = 30


def _missing_browser() -> str | None:
    if not (os.path.exists(CHROMIUM) and os.path.exists(CHROMEDRIVER)):
        return f"no {CHROMIUM} and {CHROMEDRIVER} (apt-get install chromium chromium-driver; bootstrap.sh does)"
    try:
        import selenium  # noqa: F401
    except ImportError:
        return "no selenium (a dev extra: bash deploy/local/bootstrap.sh)"
    return None


@pytest.fixture
def browser(tmp_path) -> Iterator:
    missing = _missing_browser()
    if missing:
        if os.environ.get("CI") == "true":
            pytest.fail(f"CI must run the console tests: {missing}", pytrace=False)
        pytest.skip(missing)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    # This machine has no internet: every background fetch of Chromium's is turned off.
    for arg in ("--headless=new", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--disable-quic",
                "--no-first-run", "--disable-background-networking", "--disable-component-update",
                "--disable-sync", "--window-size=1280,900", f"--user-data-dir={tmp_path / 'chromium'}"):
        options.add_argument(arg)
    driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
    try:
        driver.set_window_size(1280, 900)
        # The screenshots show the page at 1280x900 itself, whatever the window's frame takes.
        driver.execute_cdp_cmd("Emulation.setDeviceMetricsOverride",
                               {"width": 1280, "height": 900, "deviceScaleFactor": 1, "mobile": False})
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(tmp_path / "chromium", ignore_errors=True)


@pytest.fixture
def node(taskring_env) -> Iterator[NodeProcess]:
    n = NodeProcess(taskring_env, "console-1", single=True, admin_token=TOKEN, TASKRING_ADMIN_TOKEN=TOKEN).start()
    try:
        n.wait_ready()
        yield n
    finally:
        n.terminate()


# ---------------------------------------------------------------- driving the page

class Page:
    """The console in one browser tab: by data-testid, waiting on conditions, never sleeping."""

    def __init__(self, driver, base: str, scratch: Path):
        from selenium.webdriver.support.ui import WebDriverWait
        self.driver = driver
        self.base = base
        self.failure_png = scratch / "failure.png"
        self.screenshots = DOCS_SCREENSHOTS if UPDATE_SCREENSHOTS else scratch / "screenshots"
        self.wait = WebDriverWait(driver, WAIT_S)

    def open(self, hash_: str) -> None:
        self.driver.get(f"{self.base}/?token={TOKEN}#{hash_}")

    def go(self, hash_: str) -> None:
        self.driver.execute_script("location.hash = arguments[0]", hash_)

    def find(self, testid: str, within=None):
        from selenium.webdriver.common.by import By
        return (within or self.driver).find_element(By.CSS_SELECTOR, f'[data-testid="{testid}"]')

    def all(self, testid: str) -> list:
        from selenium.webdriver.common.by import By
        return self.driver.find_elements(By.CSS_SELECTOR, f'[data-testid="{testid}"]')

    def until(self, condition, what: str):
        """Wait for `condition()` to be truthy (exceptions count as not yet); its value."""
        def check(_driver):
            try:
                return condition()
            except Exception:
                return False
        from selenium.common.exceptions import TimeoutException
        try:
            return self.wait.until(check)
        except TimeoutException:
            # What the console said (an API error shows there), where it was, and what it looked like.
            self.driver.save_screenshot(str(self.failure_png))
            said = self.driver.execute_script(
                "const m = document.getElementById('message'); return m ? m.textContent : ''")
            raise AssertionError(f"the console did not show {what} within {WAIT_S} s; at"
                                 f" {self.driver.current_url}, it said: {said!r}"
                                 f" (screenshot {self.failure_png})") from None

    def fresh(self, read: Callable[[], T]) -> T:
        """`read()`, again while the page re-renders under it: each page refreshes itself every
        few seconds and replaces the elements a read found (StaleElementReferenceException).
        Reads that hold elements go through here and return plain values."""
        from selenium.common.exceptions import StaleElementReferenceException
        deadline = time.monotonic() + WAIT_S
        while True:
            try:
                return read()
            except StaleElementReferenceException:
                if time.monotonic() > deadline:
                    raise

    def text(self, testid: str) -> str:
        return self.fresh(lambda: self.find(testid).text)

    def texts(self, testid: str) -> list[str]:
        return self.fresh(lambda: [e.text for e in self.all(testid)])

    def attr(self, testid: str, name: str) -> str | None:
        return self.fresh(lambda: self.find(testid).get_attribute(name))

    def attrs(self, testid: str, name: str) -> list[str | None]:
        return self.fresh(lambda: [e.get_attribute(name) for e in self.all(testid)])

    def enabled(self, testid: str) -> bool:
        return self.fresh(lambda: self.find(testid).is_enabled())

    def until_text(self, testid: str, wanted: str) -> str:
        return self.until(lambda: wanted in self.text(testid) and self.text(testid), f"{wanted!r} in {testid}")

    def type(self, testid: str, text: str) -> None:
        field = self.find(testid)
        field.clear()
        field.send_keys(text)

    def click(self, testid: str) -> None:
        self.fresh(lambda: self.find(testid).click())

    def shot(self, name: str) -> None:
        self.screenshots.mkdir(parents=True, exist_ok=True)
        path = self.screenshots / f"{name}.png"
        assert self.driver.save_screenshot(str(path))
        assert path.stat().st_size < MAX_SCREENSHOT_BYTES, (path, path.stat().st_size)


# ---------------------------------------------------------------- the tests

def test_console_pages_fix_a_dead_letter_and_bulk_replay(node, payments, browser, tmp_path):
    with Client(node.target) as client:
        ids = dead_letter(client, [charge(3000 + i) for i in range(6)])
    target, rest = ids[0], ids[1:]
    page = Page(browser, node.admin, tmp_path)

    # Overview: the dead letters now, and today's figures, from the per-minute aggregates the
    # node writes every few seconds (the page refreshes itself until they show).
    page.open("overview")
    page.until_text("card-dead-letters", "6")
    row = page.until(lambda: next((t for t in page.texts("stats-row") if "charge" in t), None),
                     "today's figures of shop/charge")
    assert row.split()[:4] == ["shop", "charge", "6", "0"], row   # submitted 6, succeeded 0
    assert "Overview" in page.text("page-overview")
    page.shot("overview")

    # Live: this node, every slot it owns, queue depth per path and what is in flight.
    page.go("live")
    page.until(lambda: len(page.all("live-slot")) == PARTITIONS, f"{PARTITIONS} slots")
    assert page.attrs("live-node", "data-node") == ["console-1"]
    assert page.attrs("live-slot", "data-slot") == [str(i) for i in range(PARTITIONS)]
    [line] = page.texts("live-node")
    assert "0, 1, 2" in line and "Kafka path" in page.text("live-cards")
    assert "in flight here" in page.text("live-in-flight")
    page.shot("live")

    # Ring: the ring page, in its frame.
    page.go("ring")
    frame = page.until(lambda: page.find("ring-frame").get_attribute("src") and page.find("ring-frame"), "the ring")
    browser.switch_to.frame(frame)
    try:
        page.until(lambda: "console-1" in browser.find_element("tag name", "body").text
                   and "taskring ring" in browser.find_element("tag name", "h1").text, "the ring page")
    finally:
        browser.switch_to.default_content()
    page.shot("ring")

    # Failures: one line for the six, then the group's dead letters, then one of them.
    page.go("failures")
    group = page.until(lambda: page.texts("dlq-group")[0], "the failure group")
    assert group.split()[0] == "6", group   # its first cell: the count
    assert "card declined for order <n>" in group and "ValueError" in group
    page.fresh(lambda: page.all("dlq-group")[0].click())
    page.until(lambda: len(page.all("dlq-row")) == 6, "the group's six dead letters")
    page.shot("failures")
    page.fresh(lambda: next(r for r in page.all("dlq-row") if r.get_attribute("data-task-id") == target).click())
    trace = page.until(lambda: page.texts("stack-trace")[0], "the stack trace")
    assert "Traceback" in trace and "ValueError: card declined for order 3000" in trace
    assert '"card": "bad"' in (page.attr("dl-payload", "value") or "")

    # Edit: the diff first (nothing written), then confirm with its digest.
    page.type("dl-reason", "customer updated the card")
    page.type("dl-payload", '{"order": 3000, "card": "good"}')
    page.click("dl-preview")
    diff = page.until_text("dl-diff", '+  "card": "good"')
    assert '-  "card": "bad"' in diff, diff
    assert page.enabled("dl-confirm")
    page.shot("dead-letter")
    page.click("dl-confirm")
    page.until_text("message", "payload edited and replayed")

    # Task: found by its id, followed until it succeeds; the replay is in its history.
    page.go("task")
    page.type("task-id", target)
    page.click("task-go")
    page.until(lambda: page.text("kv-state") == "succeeded", "the edited task to succeed")
    entries = page.texts("history-entry")
    assert any("payload edited and replayed by admin" in e and "customer updated the card" in e for e in entries), \
        entries
    assert "dlq.edit" in page.text("task-audit")
    page.shot("task")

    # Bulk replay of the current filter, paused and resumed, watched to done.
    payments.fixed.set()   # the card processor is back
    page.go("failures")
    page.type("dlq-namespace", NS)
    page.type("dlq-task-type", "charge")
    page.click("dlq-apply")
    page.until_text("dlq-summary", "5 dead letters in 1 group")
    page.until_text("bulk-filter", "namespace=shop, task_type=charge")
    page.type("bulk-rate", "1")
    page.type("bulk-reason", "card processor is back")
    page.click("bulk-start")
    page.until_text("bulk-progress", "of 5")
    page.click("bulk-pause")
    page.until_text("bulk-progress", "paused")
    assert not page.enabled("bulk-pause") and page.enabled("bulk-resume")
    page.click("bulk-resume")
    page.until(lambda: page.attr("bulk-progress", "data-state") == "done", "the bulk replay done")
    assert "5 of 5" in page.text("bulk-progress")
    with Client(node.target) as client:
        wait_until(lambda: all(client.get(i).state == TaskState.SUCCEEDED for i in rest), 60,
                   "every bulk-replayed task to succeed")

    # Audit: every action, with who and why.
    page.go("audit")
    page.until(lambda: {"dlq.edit", "bulk_replay.start", "bulk_replay.pause", "bulk_replay.resume"}
               <= set(page.attrs("audit-row", "data-action")), "the audit records")
    assert "customer updated the card" in page.text("audit-records")
    page.type("audit-action", "dlq.edit")
    page.click("audit-apply")
    page.until(lambda: set(page.attrs("audit-row", "data-action")) == {"dlq.edit"},
               "only the edit")
    page.type("audit-action", "")
    page.click("audit-apply")
    page.until(lambda: len(page.all("audit-row")) >= 4, "every record again")
    page.shot("audit")


# ---------------------------------------------------------------- against a stand-in endpoint

STATS = {"day": {"since": "2026-12-01T00:00:00Z", "types": [
            {"namespace": NS, "task_type": "charge", "submitted": 40, "succeeded": 30, "failed": 6,
             "dead_lettered": 4, "success_rate": 0.75, "duration_p50_ms": 12, "duration_p99_ms": 180},
            {"namespace": NS, "task_type": "ship", "submitted": 0, "succeeded": 0, "failed": 0,
             "dead_lettered": 0, "success_rate": None, "duration_p50_ms": None, "duration_p99_ms": None}]},
         "series": [{"minute": f"2026-12-01T10:{m:02d}:00Z", "submitted": m, "succeeded": m // 2, "failed": 1,
                     "dead_lettered": 0} for m in range(0, 60, 2)]}
"""The statistics as GET /api/stats?hours=1 answers them: minutes without events are left out."""


@pytest.fixture
def stand_in() -> Iterator[str]:
    """An admin endpoint with the console and canned answers: a viewer calls it, so every
    action is refused by the endpoint's own role check (403 with a JSON `error`)."""
    detail = {"dead_letter": {"namespace": NS, "task_type": "charge", "slot": 0, "attempts": 1,
                              "error_class": "ValueError", "last_error": "card declined",
                              "first_attempt_at": None, "dead_lettered_at": "2026-12-01T00:00:00Z"},
              "envelope": {"payload": {"card": "<b>bad</b>"}}, "attempts": [], "history": [], "digest": "d"}
    canned = [
        rt.route("GET", "/api/stats", Role.VIEWER, lambda req: rt.Response.of_json(STATS)),
        rt.route("GET", "/api/dead-letters/groups", Role.VIEWER,
                 lambda req: rt.Response.of_json({"groups": [], "total": 0, "filter": {}})),
        rt.route("GET", "/api/dead-letters/t1", Role.VIEWER, lambda req: rt.Response.of_json(detail)),
        rt.route("POST", "/api/dead-letters/t1/replay", Role.OPERATOR,
                 lambda req: rt.Response.of_json({"replayed": True})),
    ]
    ring = {"node": "n1", "members": {"n1": {}}, "slots": []}
    server = AdminServer(host="127.0.0.1", port=0, ring=lambda: ring, ready=lambda: (True, "ready"),
                         alive=lambda: (True, "serving"), registry=CollectorRegistry(),
                         routes=[*console_routes(lambda: ring, dict), *canned],
                         authenticate=lambda headers, query: Identity("vera", Role.VIEWER))
    server.start()
    try:
        yield f"http://127.0.0.1:{server.port}"
    finally:
        server.stop()


def test_the_console_signs_in_on_a_cookie_and_leaves_the_token_nowhere(node, browser, tmp_path):
    page = Page(browser, node.admin, tmp_path)
    # Without a session the shell loads and asks for a token; the data routes answer 401.
    browser.get(f"{node.admin}/#overview")
    page.until(lambda: page.find("signin").is_displayed(), "the sign-in form")
    page.shot("signin")
    page.type("signin-token", "not-the-token")
    page.click("signin-go")
    page.until_text("message", "that token is not known here")
    page.type("signin-token", TOKEN)
    page.click("signin-go")
    page.until_text("who", "admin (operator)")
    assert page.fresh(lambda: not page.find("signin").is_displayed() and page.find("signout").is_displayed())
    page.until_text("node-name", "console-1")
    [cookie] = browser.get_cookies()
    port = node.admin.rsplit(":", 1)[1]
    assert cookie["name"] == f"taskring_session_{port}" and cookie["httpOnly"] and cookie["sameSite"] == "Strict"
    assert TOKEN not in cookie["value"]
    # The ring frame loads on the cookie too: no token in its address.
    page.go("ring")
    frame = page.until(lambda: page.find("ring-frame").get_attribute("src") and page.find("ring-frame"), "the ring")
    assert TOKEN not in (page.attr("ring-frame", "src") or "") and TOKEN not in (page.attr("ring-link", "href") or "")
    browser.switch_to.frame(frame)
    try:
        page.until(lambda: "console-1" in browser.find_element("tag name", "body").text, "the ring page")
    finally:
        browser.switch_to.default_content()
    # Signed out: the node forgets the session, and the page asks again.
    page.click("signout")
    page.until(lambda: page.find("signin").is_displayed(), "the sign-in form again")
    page.until(lambda: browser.get_cookies() == [], "the cookie cleared")
    # A link with ?token= signs in once and is then taken out of the address bar and history.
    page.open("audit")
    page.until_text("who", "admin (operator)")
    assert "token" not in browser.current_url and browser.current_url.endswith("/#audit")
    assert browser.execute_script("return document.body.innerHTML.includes(arguments[0])", TOKEN) is False


def test_the_overview_draws_the_statistics(stand_in, browser, tmp_path):
    page = Page(browser, stand_in, tmp_path)
    page.open("overview")
    rows = page.until(lambda: page.fresh(lambda: [[c.text for c in r.find_elements("css selector", "td")]
                                                  for r in page.all("stats-row")]) if len(page.all("stats-row")) == 2
                      else None, "two lines of statistics")
    assert rows[0] == [NS, "charge", "40", "30", "6", "4", "75.0 %", "12", "180"]
    assert "–" in rows[1]   # no rate when nothing ran
    bars = page.fresh(lambda: len(page.find("chart-submitted").find_elements("css selector", "rect")))
    assert bars == 60   # every minute of the hour, the empty ones too
    assert page.fresh(lambda: len(page.find("chart-outcomes").find_elements("css selector", "polyline"))) == 3
    page.go("live")
    page.until(lambda: page.find("chart-throughput"), "the throughput chart")
    assert page.text("live-throughput-now").startswith("30")   # the last minute: 29 succeeded, 1 failed


def test_a_viewer_sees_why_an_action_is_refused(stand_in, browser, tmp_path):
    page = Page(browser, stand_in, tmp_path)
    page.open("dead-letter/t1")
    page.until_text("kv-error", "card declined")
    # Data is shown as text: markup in a payload stays characters.
    assert "<b>bad</b>" in page.find("dl-payload").get_attribute("value")
    assert not browser.find_elements("css selector", "#page-dead-letter b")
    page.type("dl-reason", "let me")
    page.click("dl-replay")
    message = page.until_text("message", "needs the operator role")
    assert "vera is a viewer" in message
    assert "error" in (page.find("message").get_attribute("class") or "")


def test_the_policies_page_shows_each_type_and_saves_an_entry_for_it(node, browser, tmp_path):
    with Client(node.target) as client:
        client.policies.put("shop", "export", {"concurrency": {"per_type": 2}}, reason="set by a script")
        page = Page(browser, node.admin, tmp_path)
        page.open("policies")
        page.until(lambda: "shop/export" in page.attrs("policies-row", "data-key"), "the shop/export row")
        assert page.attrs("policies-row", "data-source") == ["api"]
        page.click("policies-row")
        assert page.until(lambda: page.find("policy-revision").get_attribute("value") == "1", "its revision to edit")
        page.type("policy-text", '{"concurrency": {"per_type": 0}}')
        page.type("policy-reason", "more room for exports")
        page.click("policy-save")
        page.until(lambda: "policy.concurrency.per_type" in page.text("message")
                   or "policy_json.concurrency.per_type" in page.text("message"), "the refusal naming the field")
        assert client.policies.get("shop", "export").revision == 1, "nothing refused was written"
        page.type("policy-text", '{"concurrency": {"per_type": 5}}')
        page.click("policy-save")
        page.until_text("policy-result", "saved: revision 2")
        saved = client.policies.get("shop", "export")
        assert (saved.revision, saved.policy) == (2, {"concurrency": {"per_type": 5}})
        page.shot("policies")
    records = node.get("/api/audit?target=policy:shop/export")["records"]
    assert [(r["action"], r["reason"]) for r in records] == [("policies.put", "more room for exports"),
                                                             ("policies.put", "set by a script")]


def test_the_graphs_page_shows_a_graph_and_skips_a_step(node, recording_executor, browser, tmp_path):
    g = Graph("console-order")
    charge = g.task("charge", TaskSpec("tests", "fatal"))
    g.task("ship", TaskSpec("tests", "ok"), after=[charge])
    with Client(node.target) as client:
        client.submit_graph(g)
        wait_until(lambda: client.get_graph("tests", "console-order").state == "finished", 60, "the graph to end")
        page = Page(browser, node.admin, tmp_path)
        page.open("graph/tests/console-order")
        page.until(lambda: page.attrs("graph-row", "data-state") == ["dead_lettered", "skipped"], "the two steps")
        assert "console-order: finished (1 dead_lettered, 1 skipped)" in page.text("graph-summary")
        page.type("graph-key", "charge")
        page.click("graph-skip")
        page.until(lambda: "reason" in page.text("message"), "the refusal naming the reason")
        assert client.get_graph("tests", "console-order").nodes["charge"].state == TaskState.DEAD_LETTERED
        page.type("graph-reason", "charged by hand")
        page.click("graph-skip")
        page.until_text("graph-result", "charge: dead_lettered -> skipped; what follows goes on")
        wait_until(lambda: client.get_graph("tests", "console-order").nodes["ship"].state == TaskState.SUCCEEDED,
                   60, "what follows the skipped step to run")
        page.until(lambda: page.attrs("graph-row", "data-state") == ["skipped", "succeeded"], "the page to follow")
        page.shot("graph")
    records = node.get("/api/audit?action=graph.skip")["records"]
    assert [(r["action"], r["reason"], r["before"]["status"]) for r in records] == [
        ("graph.skip", "charged by hand", "dead_lettered")]
