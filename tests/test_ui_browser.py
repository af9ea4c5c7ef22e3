"""The /ui web page in a real headless Chromium (Debian's chromium + chromium-driver, driven by
Selenium) against a real `semcat serve`.

- The page's end-to-end test (issue 38 item 5; default tier): on a small catalog with findings
  (tests/ui_catalog.py), a data team member searches (the same order as the MCP tool
  search_tables), opens a table (values for people, the stored JSON on request), sees the inbox
  grouped by cause, accepts a group in bulk (the refused item shown with why), and sees failed
  actions with their message: a refused edit, an expired CSRF session (the page's own HTML answer)
  and a lost login (the Guard's JSON answer), none dropped.
- On a copy of the Acme lake's stale catalog (issue 27 item 3; slow tier): log in with a read token
  (sees, cannot act), then a write token; accept a suggestion in the inbox; the item is gone and the
  agent's describe_table over MCP (the real client, streamable HTTP) shows the new annotation and no
  longer the warning.

Screenshots of every page go to tmp_path, and to $SEMCAT_UI_SCREENSHOTS when set (docs/ui holds the
README's)."""

from __future__ import annotations

import json
import os
import shutil
import tempfile

import pytest

from tests.helpers import start_server, stop_process
from tests.mcp_server.test_mcp_transports import http_client, run

TABLE = "acme.core.fct_loyalty_events"
D0 = "2025-03-10T13:00:00Z"
READ, WRITE = "ui-read-token", "ui-write-token"
CHROMIUM, DRIVER = shutil.which("chromium"), shutil.which("chromedriver")


@pytest.fixture
def browser():
    if not (CHROMIUM and DRIVER):
        pytest.fail("no chromium / chromedriver: `apt-get install -y chromium chromium-driver` (.ci/run does)")
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    profile = tempfile.mkdtemp(prefix="semcat-chromium-")
    opts = webdriver.ChromeOptions()
    opts.binary_location = CHROMIUM
    for flag in ("--headless", "--no-sandbox", "--disable-gpu", "--disable-quic", "--no-first-run",
                 "--disable-background-networking", "--disable-component-update", "--disable-sync",
                 "--disable-dev-shm-usage", f"--user-data-dir={profile}", "--window-size=1400,1000"):
        opts.add_argument(flag)
    driver = webdriver.Chrome(service=Service(DRIVER), options=opts)
    driver.set_page_load_timeout(300)
    yield driver
    driver.quit()
    shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture
def served(lake_dir, tmp_path):
    # the whole lake: a lake root's catalogs name the Parquet files beside them (../../warehouse/...)
    shutil.copytree(lake_dir, tmp_path / "lake", symlinks=True)
    data = str(tmp_path / "lake" / "stale")
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{READ}:read\n{WRITE}:write source=human name=steward\n")
    proc, url = start_server(data, str(tmp_path / "serve.log"), "--tokens", str(tokens), "--now", D0)
    yield url
    stop_process(proc)


def shot(driver, tmp_path, name: str) -> None:
    driver.save_screenshot(str(tmp_path / f"{name}.png"))
    out = os.environ.get("SEMCAT_UI_SCREENSHOTS")
    if out:
        os.makedirs(out, exist_ok=True)
        driver.save_screenshot(os.path.join(out, f"{name}.png"))


def login(driver, url: str, token: str, then: str) -> None:
    from selenium.webdriver.common.by import By

    # no cookie yet, or a new login. Once in a preflight (load 4) Chromium's `get` came back with an empty document
    # (page_source ''), not the server's page nor an error page: the navigation is made again, at most twice more
    for _ in range(3):
        driver.get(url + then)
        if "Log in" in driver.page_source:
            break
    else:
        raise AssertionError(f"no login form at {then}: {driver.page_source[:500]!r}")
    from selenium.webdriver.support.ui import WebDriverWait

    driver.find_element(By.ID, "token").send_keys(token)
    button = driver.find_element(By.ID, "login")
    button.click()
    # the click returns before the browser has left the login page: under load (a preflight, load 5-9) the
    # next lookup read the login page and found no inbox row; wait until the form is gone. Chromium may
    # answer a lookup of the button while the page is replaced with "Node with given id does not belong
    # to the document" instead of a stale reference (a session-26 preflight): that too says it is gone
    from selenium.common.exceptions import StaleElementReferenceException, WebDriverException

    def gone(_driver: object) -> bool:
        try:
            button.is_enabled()
        except StaleElementReferenceException:
            return True
        except WebDriverException as e:
            if "does not belong to the document" in str(e):
                return True
            raise
        return False

    WebDriverWait(driver, 300).until(gone)


def describe(url: str) -> dict:
    async def go(c):
        r = await c.call_tool("describe_table", {"table": TABLE, "detail": "full"})
        assert not r.is_error, r.content[0].text
        return r.structured_content
    return run(http_client(url, READ), go)


def test_accept_in_the_inbox_then_the_agent_sees_it(browser, served, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    url, driver = served, browser
    before = describe(url)
    assert any(f["reason"] == "cardinality_violated" for f in before["findings"])
    assert "cardinality_violated" in json.dumps(before["warnings"])
    # a read token sees the inbox, with nothing to click
    login(driver, url, READ, f"/ui/inbox?table={TABLE}")
    assert driver.find_elements(By.CSS_SELECTOR, f'tr[data-table="{TABLE}"]')
    assert not driver.find_elements(By.CSS_SELECTOR, "button.accept")
    assert "log in with a write token" in driver.page_source
    # the pages, as a reader
    driver.get(url + "/ui")
    assert driver.find_element(By.TAG_NAME, "h2").text.startswith("Catalog at vid")
    shot(driver, tmp_path, "catalog")
    driver.get(url + f"/ui/table/{TABLE}")
    assert driver.find_element(By.ID, "table-name").text.startswith(TABLE)
    assert driver.find_elements(By.CSS_SELECTOR, "#findings tr td")
    shot(driver, tmp_path, "table")
    driver.get(url + "/ui/diff?from=140&to=149")
    assert driver.find_elements(By.CSS_SELECTOR, "#diff tr td")
    shot(driver, tmp_path, "diff")
    driver.get(url + "/ui?snapshot=100")
    assert "Catalog at vid 100" in driver.find_element(By.TAG_NAME, "h2").text  # time travel
    # a write token decides
    login(driver, url, WRITE, "/ui/login?next=/ui/inbox")
    driver.get(url + f"/ui/inbox?table={TABLE}")
    row = driver.find_element(By.CSS_SELECTOR, 'tr[data-reason="cardinality_violated"]')
    item = row.get_attribute("data-item")
    shot(driver, tmp_path, "inbox")
    row.find_element(By.CSS_SELECTOR, "input.author").send_keys("mallory")  # ignored: the token names who decides
    row.find_element(By.CSS_SELECTOR, "input[name=note]").send_keys("dim_customer keeps versions now")
    row.find_element(By.CSS_SELECTOR, "button.accept").click()
    done = WebDriverWait(driver, 300).until(EC.presence_of_element_located((By.CSS_SELECTOR, f"tr#item-{item}.done")))
    assert "accepted" in done.text and "relationship.customer" in done.text
    shot(driver, tmp_path, "inbox-accepted")
    driver.get(url + f"/ui/inbox?table={TABLE}")
    assert not driver.find_elements(By.CSS_SELECTOR, f"tr#item-{item}")
    assert driver.find_element(By.ID, "inbox-count").text.startswith("0 open items")
    driver.get(url + f"/ui/table/{TABLE}/history")
    history = driver.find_element(By.ID, "history").text
    assert "steward" in history and "mallory" not in history  # the author is the token's principal, not the form
    shot(driver, tmp_path, "history")
    # the agent's next describe_table: the new annotation, no finding, no warning
    after = describe(url)
    assert not any(f["reason"] == "cardinality_violated" for f in after["findings"])
    assert "cardinality_violated" not in json.dumps(after["warnings"])
    [rel] = [r for r in after["relationships"] if r["name"] == "customer"]
    assert rel["condition"] == "acme.core.dim_customer.is_current" and rel["status"] == "fresh"


@pytest.fixture
def small(tmp_path):
    """`semcat serve` on the small catalog with findings (tests/ui_catalog.py): (url, build info)."""
    import datetime as dt

    import catalog_core as cc
    from tests.ui_catalog import build

    data = str(tmp_path / "small")
    cat = cc.Catalog.open(data)
    try:
        info = build(cat, str(tmp_path / "files"))
    finally:
        cat.close()
    tokens = tmp_path / "tokens"
    tokens.write_text(f"{READ}:read\n{WRITE}:write source=human name=steward\n")
    now = dt.datetime.fromtimestamp(info["now"], dt.UTC).strftime("%Y-%m-%dT%H:%M:%SZ")
    proc, url = start_server(data, str(tmp_path / "serve-small.log"), "--tokens", str(tokens), "--now", now)
    yield url, info
    stop_process(proc)


@pytest.mark.e2e  # the page's surface: one Chromium, one `semcat serve` on a catalog built in a second
def test_search_groups_bulk_and_failures_in_the_page(browser, small, tmp_path):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions as EC
    from selenium.webdriver.support.ui import WebDriverWait

    from tests.ui_catalog import CUSTOMERS, ORDERS, RENAME_GROUP

    (url, info), driver = small, browser
    wait = WebDriverWait(driver, 300)
    login(driver, url, WRITE, "/ui/login?next=/ui")
    wait.until(EC.presence_of_element_located((By.ID, "search-box")))
    # search, as the agents' search_tables ranks it
    query = "orders amount customers"

    async def mcp(c):
        r = await c.call_tool("search_tables", {"query": query, "limit": 10})
        assert not r.is_error, r.content[0].text
        return [t["name"] for t in r.structured_content["tables"]]
    expected = run(http_client(url, READ), mcp)
    box = driver.find_element(By.CSS_SELECTOR, "#search-box input[name=q]")
    box.send_keys(query)
    driver.find_element(By.CSS_SELECTOR, "#search-box button").click()
    wait.until(EC.presence_of_element_located((By.ID, "search-count")))
    hits = [h.get_attribute("data-table") for h in driver.find_elements(By.CSS_SELECTOR, "#hits .hit")]
    assert hits == expected and hits[0] == ORDERS, (hits, expected)
    shot(driver, tmp_path, "search")
    driver.find_element(By.CSS_SELECTOR, f'.hit[data-table="{ORDERS}"] a.name').click()
    assert wait.until(EC.presence_of_element_located((By.ID, "table-name"))).text.startswith(ORDERS)
    # values for people; the stored JSON on request
    assert driver.find_element(By.ID, "sla").text == "every 7 days 17 hours"
    assert driver.find_element(By.ID, "row-count").text == "2,000"
    assert "KiB" in driver.find_element(By.ID, "size").text
    schema = driver.find_element(By.ID, "schema").text
    assert "enum: placed, shipped, delivered" in schema and '["placed"' not in driver.page_source
    shot(driver, tmp_path, "table-readable")
    driver.find_element(By.ID, "raw-toggle").click()
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, '#raw-toggle[data-raw="1"]')))
    assert any('"placed"' in p.text for p in driver.find_elements(By.CSS_SELECTOR, "#schema pre.raw"))
    shot(driver, tmp_path, "table-raw")
    driver.find_element(By.ID, "raw-toggle").click()
    wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, '#raw-toggle[data-raw="0"]')))
    # the inbox: one group per cause, in words, with its evidence
    driver.get(url + "/ui/inbox")
    group = RENAME_GROUP.format(vid=info["rename_vid"])
    sec = driver.find_element(By.CSS_SELECTOR, f'section.group[data-group="{group}"]')
    assert sec.get_attribute("data-count") == "4"
    assert "acme.core.orders renamed column amount_cents" in sec.find_element(By.TAG_NAME, "h3").text
    assert "now called" in sec.find_element(By.CSS_SELECTOR, "table.evidence").text
    assert "get_column_values" not in driver.page_source and "edit_and_accept" not in sec.text
    shot(driver, tmp_path, "inbox-groups")
    # a refused edit: the row shows the server's reason and what to do
    metric = sec.find_element(By.XPATH, ".//tr[contains(., 'metric.revenue')]")
    mid = metric.get_attribute("data-item")
    metric.find_element(By.CSS_SELECTOR, "input[name=value]").send_keys('{"expression": "sum(no_such_column)"}')
    metric.find_element(By.CSS_SELECTOR, "button.edit").click()
    failed = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f'tr#item-{mid}[data-failed="400"]')))
    assert "no_such_column" in failed.text and "Nothing was written" in failed.text
    shot(driver, tmp_path, "inbox-refused-edit")
    # bulk accept of the group: all four written, the verified query rewritten and verified again
    sec = driver.find_element(By.CSS_SELECTOR, f'section.group[data-group="{group}"]')
    sec.find_element(By.CSS_SELECTOR, "input[name=note]").send_keys("moved with the rename")
    sec.find_element(By.CSS_SELECTOR, "button.bulk-accept").click()
    done = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, 'section.group.done[data-done="accept"]')))
    assert done.get_attribute("data-decided") == "4" and done.get_attribute("data-skipped") == "0"
    assert "Accepted 4 items" in done.text
    assert done.find_elements(By.CSS_SELECTOR, f'.decided [data-item="{mid}"]')  # the refused edit left it open
    shot(driver, tmp_path, "inbox-bulk-accepted")
    # an expired CSRF session: the page's own 403 answer, swapped in
    row = driver.find_element(By.CSS_SELECTOR, f'tr[data-table="{CUSTOMERS}"][data-reason="column_dropped"]')
    rid = row.get_attribute("data-item")
    driver.delete_cookie("semcat_session")
    row.find_element(By.CSS_SELECTOR, "input[name=reason]").send_keys("region moved to another table")
    row.find_element(By.CSS_SELECTOR, "button.dismiss").click()
    failed = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f'tr#item-{rid}[data-failed="403"]')))
    assert "CSRF" in failed.text and "Reload the page" in failed.text
    # a lost login: the Guard's JSON 401, shown with its message by the page's handler
    row = driver.find_element(By.CSS_SELECTOR, f'tr[data-table="{CUSTOMERS}"][data-reason="schema_changed"]')
    oid = row.get_attribute("data-item")
    driver.delete_cookie("semcat_token")
    row.find_element(By.CSS_SELECTOR, "button.dismiss").click()
    failed = wait.until(EC.presence_of_element_located((By.CSS_SELECTOR, f'tr#item-{oid}[data-failed="401"]')))
    assert "log in first" in failed.text and "Log in again" in failed.text
    shot(driver, tmp_path, "inbox-failures")
    # neither failed action changed anything
    login(driver, url, WRITE, "/ui/login?next=/ui/inbox")
    wait.until(EC.presence_of_element_located((By.ID, "inbox-count")))
    assert driver.find_elements(By.CSS_SELECTOR, f"tr#item-{rid}") and driver.find_elements(By.CSS_SELECTOR,
                                                                                             f"tr#item-{oid}")
    assert not driver.find_elements(By.CSS_SELECTOR, f"tr#item-{mid}")  # accepted with its group
