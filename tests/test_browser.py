"""The history in a real browser: headless Chromium (Debian's ``chromium`` and
``chromium-driver``) drives the admin of a live server after a real delivery to the
loopback engine: it logs in, finds a URL by search, sees the chart, opens a record,
runs "Send again" (the engine receives the URLs again), and uses "Submit URLs" and
the "Submit now" button of a registered model's change page.

On each page it checks that the app's parts look like the installed Django's own (the
breadcrumbs, form rows and object tools, whose markup changed in Django 6.1), and that at
1400 px the list's title, button and chart legend do not wrap and its table needs no
sideways scrolling. Run it on each supported Django (``nox -s tests``).

It takes the screenshots of docs/admin.md. They are written to a temporary
directory, to ``docs/img/`` when ``INDEXNOW_SCREENSHOTS=docs`` is set, or to
``$INDEXNOW_SCREENSHOTS/django-<version>/`` for any other folder, to compare versions.
"""

from __future__ import annotations

import os
import shutil
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import django
import pytest
from django.contrib.auth.models import User
from django.utils.formats import date_format
from django.utils.timezone import localtime

from indexnow_django.models import Delivery
from indexnow_django.protocol.client import endpoint_name
from indexnow_django.units.dispatch import dispatch
from tests.needs import AT_ONCE
from tests.testapp.models import Post

# The deliveries the pages show are made here, in process, as the test makes them.
pytestmark = pytest.mark.indexnow(**AT_ONCE)

ROOT = Path(__file__).resolve().parents[1]
A = "https://www.example.com/browser/first-post/"
B = "https://www.example.com/browser/second-post/"

#: Where Debian's packages put them; ``CHROMIUM`` / ``CHROMEDRIVER`` override.
CHROMIUM = os.environ.get("CHROMIUM", "/usr/bin/chromium")
CHROMEDRIVER = os.environ.get("CHROMEDRIVER", "/usr/bin/chromedriver")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-dev-shm-usage",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--window-size=1400,1000",
]
WAIT = 20


@pytest.fixture
def browser(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Any]:
    """Headless Chromium through chromedriver; a missing browser is an error, not a skip."""
    missing = [p for p in (CHROMIUM, CHROMEDRIVER) if not shutil.which(p)]
    if missing:
        pytest.fail(
            f"The browser test needs Chromium and its driver, not found: {', '.join(missing)}. "
            "Install them (Debian/Ubuntu: apt-get install chromium chromium-driver), or set "
            "CHROMIUM and CHROMEDRIVER to their paths.",
            pytrace=False,
        )
    try:
        from selenium import webdriver
        from selenium.webdriver.chrome.service import Service
    except ImportError:
        pytest.fail("The browser test needs selenium: pip install -e '.[test]'.", pytrace=False)
    monkeypatch.setenv("SE_OFFLINE", "true")  # never let Selenium fetch a driver
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in [*FLAGS, f"--user-data-dir={tmp_path / 'chromium-profile'}"]:
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=CHROMEDRIVER))
    driver.implicitly_wait(0)
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def shots(tmp_path: Path) -> Path:
    where = os.environ.get("INDEXNOW_SCREENSHOTS")
    if where == "docs":
        folder = ROOT / "docs" / "img"
    elif where:
        folder = Path(where) / f"django-{django.__version__}"
    else:
        folder = tmp_path / "img"
    folder.mkdir(parents=True, exist_ok=True)
    return folder


def wait_for(driver: Any, css: str) -> Any:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support import expected_conditions
    from selenium.webdriver.support.ui import WebDriverWait

    return WebDriverWait(driver, WAIT).until(
        expected_conditions.presence_of_element_located((By.CSS_SELECTOR, css))
    )


#: Computed styles that make a part look like the rest of the admin.
LOOK = ["font-size", "font-weight", "color", "background-color", "text-transform", "padding-left"]


def look(driver: Any, element: Any, properties: list[str] = LOOK) -> dict[str, str]:
    return driver.execute_script(
        "const style = getComputedStyle(arguments[0]);"
        "return Object.fromEntries(arguments[1].map(name => [name, style.getPropertyValue(name)]));",
        element,
        properties,
    )


def lines(driver: Any, element: Any) -> float:
    """How many lines of text an element takes."""
    return driver.execute_script(
        "const e = arguments[0], style = getComputedStyle(e);"
        "const line = parseFloat(style.lineHeight) || parseFloat(style.fontSize) * 1.2;"
        "const box = e.getBoundingClientRect();"
        "return (box.height - parseFloat(style.paddingTop) - parseFloat(style.paddingBottom)) / line;",
        element,
    )


def breadcrumbs(driver: Any) -> tuple[str, dict[str, str], list[str]]:
    """The breadcrumbs' element, look and texts, as the installed Django writes them."""
    from selenium.webdriver.common.by import By

    element = driver.find_element(By.CSS_SELECTOR, ".breadcrumbs")
    links = element.find_elements(By.CSS_SELECTOR, "a")
    return (
        element.tag_name,
        {**look(driver, element), "display": look(driver, element, ["display"])["display"]},
        sorted({str(look(driver, link, ["color", "text-decoration-line"])) for link in links}),
    )


@pytest.mark.slow
def test_the_admin_in_a_browser_finds_sends_again_and_submits(
    browser, live_server, engine, history_on, indexnow_settings, shots
):
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import Select

    # A real delivery to the loopback engine, and a page with a registration.
    post = Post.objects.create(title="Hello", slug="hello", status=Post.PUBLISHED)
    engine.wait_for_posts(1)
    dispatch([A, B])
    engine.wait_for_posts(2)
    assert Delivery.objects.count() == 2
    User.objects.create_superuser("admin", "admin@example.com", "admin-password")

    browser.get(f"{live_server.url}/admin/login/?next=/admin/indexnow/delivery/")
    wait_for(browser, "#id_username").send_keys("admin")
    browser.find_element(By.ID, "id_password").send_keys("admin-password")
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()

    # The list, its chart, and a search for part of a URL.
    wait_for(browser, "#result_list")
    assert browser.get_window_size()["width"] == 1400
    bars = browser.find_elements(By.CSS_SELECTOR, "#indexnow-chart svg rect")
    assert bars, "no bar in the chart"
    assert "URLs per day by outcome" in browser.find_element(By.ID, "indexnow-chart").text
    browser.save_screenshot(str(shots / "admin-deliveries.png"))
    # At 1400 px nothing wraps and the table needs no sideways scrolling.
    native_crumbs = breadcrumbs(browser)  # Django's own change list
    title = browser.find_element(By.CSS_SELECTOR, "#content h1")
    button = browser.find_element(By.CSS_SELECTOR, ".object-tools a.addlink")
    caption = browser.find_element(By.CSS_SELECTOR, "#indexnow-chart figcaption")
    for name, element in [("title", title), ("Submit URLs", button), ("chart legend", caption)]:
        assert lines(browser, element) < 1.5, f"the {name} wraps"
    chart_top = browser.find_element(By.ID, "indexnow-chart").rect["y"]
    assert chart_top >= title.rect["y"] + title.rect["height"], "the chart sits beside the title"
    results = browser.find_element(By.CSS_SELECTOR, "#changelist .results")
    overflow = browser.execute_script(
        "return arguments[0].scrollWidth - arguments[0].clientWidth;", results
    )
    widths = browser.execute_script(
        "return [...document.querySelectorAll('#result_list thead th')].map(th => [th.innerText, th.getBoundingClientRect().width]);"
    )
    assert overflow <= 0, f"the list scrolls sideways by {overflow}px: {widths}"
    search = browser.find_element(By.ID, "searchbar")
    search.send_keys("second-post")
    search.submit()
    wait_for(browser, "#result_list")
    rows = browser.find_elements(By.CSS_SELECTOR, "#result_list tbody tr")
    assert len(rows) == 1
    record = Delivery.objects.get(urls__contains="second-post")
    assert f"/admin/indexnow/delivery/{record.pk}/change/" in rows[0].get_attribute("innerHTML")

    # The list shows which URL a row is about.
    assert rows[0].find_element(By.CSS_SELECTOR, "td.field-first_url").text == f"{A} (+1)"

    # The record: its URLs first, in sight without scrolling, and the engine's answer.
    rows[0].find_element(By.CSS_SELECTOR, "th a").click()
    urls = wait_for(browser, "ol.indexnow-urls")
    assert urls.text.split("\n") == [A, B]
    fields = browser.find_elements(By.CSS_SELECTOR, "#content-main .form-row")
    assert "field-url_list_html" in fields[0].get_attribute("class")
    viewport = browser.execute_script("return window.innerHeight;")
    assert urls.rect["y"] + urls.rect["height"] <= viewport, "the URLs are below the fold"
    # No empty "History" tool; the time as in the list: the admin's own format.
    assert not browser.find_elements(By.CSS_SELECTOR, ".historylink")
    sent = browser.find_element(By.CSS_SELECTOR, ".field-sent_at_html time").text
    assert sent == date_format(localtime(record.sent_at), "DATETIME_FORMAT"), sent
    heading = browser.find_element(By.CSS_SELECTOR, "#content h2").text
    assert heading == f"www.example.com → {record.engine}: 2 URL(s) accepted"
    assert breadcrumbs(browser) == native_crumbs
    browser.save_screenshot(str(shots / "admin-delivery.png"))
    browser.back()

    # "Send again": the engine receives the URLs again, past the debounce store.
    wait_for(browser, "#result_list")
    before = len(engine.posts)
    browser.find_element(By.CSS_SELECTOR, "#result_list tbody input.action-select").click()
    Select(browser.find_element(By.NAME, "action")).select_by_value("send_again")
    browser.find_element(By.CSS_SELECTOR, "button[name=index]").click()
    message = wait_for(browser, "ul.messagelist li.success")
    assert "2 URLs of 1 record(s)" in message.text
    [again] = engine.wait_for_posts(before + 1)[before:]
    assert again.urls == [A, B]

    # "Submit URLs": valid lines sent, the invalid one reported with its number.
    browser.get(f"{live_server.url}/admin/indexnow/delivery/submit/")
    box = wait_for(browser, "#id_urls")
    box.send_keys("/browser/third-post/\nwww.example.com/no-scheme\n/browser/fourth-post/")
    browser.find_element(By.CSS_SELECTOR, "#indexnow-submit-form input[type=submit]").click()
    skipped = wait_for(browser, "#indexnow-invalid")
    assert "line 2: www.example.com/no-scheme" in skipped.text
    browser.save_screenshot(str(shots / "admin-submit.png"))
    # Breadcrumbs and form rows as on Django's own pages of this version.
    assert breadcrumbs(browser) == native_crumbs
    assert browser.find_element(By.CSS_SELECTOR, ".breadcrumbs").text.endswith("Submit URLs")
    submit_label = look(browser, browser.find_element(By.CSS_SELECTOR, "label[for=id_urls]"))
    submit_row = browser.find_element(By.CSS_SELECTOR, ".form-row.field-urls")
    submit_row_look = look(browser, submit_row, ["padding-top", "border-bottom-color", "display"])
    posts = engine.wait_for_posts(before + 2)
    assert posts[-1].urls == [
        "https://www.example.com/browser/third-post/",
        "https://www.example.com/browser/fourth-post/",
    ]

    # A registered model's change page: when its URL was accepted, and "Submit now".
    browser.get(f"{live_server.url}/admin/testapp/post/{post.pk}/change/")
    status = wait_for(browser, "#indexnow-status")
    assert "last accepted" in status.text
    browser.save_screenshot(str(shots / "admin-object.png"))
    # A required field of a change form looks like the Submit URLs page's box, and the
    # "Submit now" button like the object tools beside it.
    title_label = browser.find_element(By.CSS_SELECTOR, "label[for=id_title]")
    assert look(browser, title_label) == submit_label
    title_row = browser.find_element(By.CSS_SELECTOR, ".form-row.field-title")
    assert look(browser, title_row, ["padding-top", "border-bottom-color", "display"]) == (
        submit_row_look
    )
    history = browser.find_element(By.CSS_SELECTOR, ".object-tools a.historylink")
    submit_now = browser.find_element(By.CSS_SELECTOR, "#indexnow-submit-now button")
    tool_look = [*LOOK, "border-radius", "letter-spacing", "font-family"]
    assert look(browser, submit_now, tool_look) == look(browser, history, tool_look)
    assert abs(submit_now.rect["height"] - history.rect["height"]) <= 1
    assert abs(submit_now.rect["y"] - history.rect["y"]) <= 1
    browser.find_element(By.CSS_SELECTOR, "#indexnow-submit-now button").click()
    wait_for(browser, "ul.messagelist li.success")
    assert engine.wait_for_posts(before + 3)[-1].urls == ["https://www.example.com/posts/hello/"]


@pytest.mark.slow
def test_the_deliveries_list_shows_trouble_while_it_lasts_and_links_to_the_report(
    browser, live_server, engine, history_on, shots
):
    from selenium.webdriver.common.by import By

    from indexnow_django.testing import Reply

    # Five POSTs answered 429 for the host: a notice above the list.
    engine.queue_replies(*[Reply(429, body="Too Many Requests")] * 5)
    for n in range(5):
        dispatch([f"https://www.example.com/browser/busy-{n}/"])
    assert [post.reply.status for post in engine.posts] == [429] * 5
    User.objects.create_superuser("admin", "admin@example.com", "admin-password")
    browser.get(f"{live_server.url}/admin/login/?next=/admin/indexnow/delivery/")
    wait_for(browser, "#id_username").send_keys("admin")
    browser.find_element(By.ID, "id_password").send_keys("admin-password")
    browser.find_element(By.CSS_SELECTOR, "input[type=submit]").click()

    notice = wait_for(browser, "#indexnow-trouble li")
    name = endpoint_name(engine.url)
    assert notice.text.startswith(f"www.example.com → {name}: 5 failed POSTs in a row since ")
    assert "last answer: 429 (too many requests): Too Many Requests; never accepted" in notice.text
    assert "warning" in notice.get_attribute("class").split()
    # Above the list, below the title, full width like the chart.
    title = browser.find_element(By.CSS_SELECTOR, "#content h1")
    assert notice.rect["y"] >= title.rect["y"] + title.rect["height"]
    assert notice.rect["y"] < browser.find_element(By.ID, "result_list").rect["y"]
    browser.save_screenshot(str(shots / "admin-trouble.png"))

    # The report, from its button beside "Submit URLs".
    browser.find_element(By.CSS_SELECTOR, ".object-tools a.viewlink").click()
    table = wait_for(browser, "#indexnow-report")
    assert browser.find_element(By.CSS_SELECTOR, ".breadcrumbs").text.endswith("Freshness report")
    [row] = table.find_elements(By.CSS_SELECTOR, "tbody tr")
    cells = [cell.text.split("\n")[0] for cell in row.find_elements(By.CSS_SELECTOR, "th, td")]
    assert cells == ["other URLs", "5", "0", "-", "-", "5", "0"]
    browser.back()

    # An accepted POST: the notice is gone.
    dispatch(["https://www.example.com/browser/fine/"])
    assert engine.posts[-1].reply.status == 200
    browser.refresh()
    wait_for(browser, "#result_list")
    assert browser.find_elements(By.ID, "indexnow-trouble") == []
