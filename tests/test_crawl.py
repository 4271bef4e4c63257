"""Crawl receipts: an engine's crawler fetched a URL after an engine accepted it.

Requests go through the real middleware stack (Django's test client); sightings go to the
suite's Redis; a real rq worker verifies and records them in the end-to-end test, the
others drain in this process with the same code. DNS answers come from
``tests.crawl_dns.TableResolver``: no network.
"""

from __future__ import annotations

import asyncio
import json
from datetime import timedelta
from io import StringIO
from typing import Any

import pytest
from django.core import checks
from django.core.management import call_command
from django.test import Client
from django.utils import timezone

from indexnow_django import signals
from indexnow_django.conf import get_settings
from indexnow_django.crawl.crawlers import CRAWLERS, PUBLISHED_RANGES, crawler_of, networks
from indexnow_django.crawl.notice import STREAM_KEY
from indexnow_django.crawl.receipts import after_text, drain
from indexnow_django.crawl.verify import Verifier
from indexnow_django.crawl.waits import wait_for_crawlers
from indexnow_django.models import CrawlReceipt, Delivery
from indexnow_django.sending.history import purge
from indexnow_django.sending.parcel import new_batch_id
from indexnow_django.testing import capture_submissions
from indexnow_django.transports.rq.queue import connection
from tests import crawl_dns
from tests.conftest import make_delivery
from tests.crawl_dns import BINGBOT, FORGED_PTR, PROXY, SPOOFER, VISITOR, TableResolver
from tests.rqhelpers import FAST_SWEEP, wait_for_count
from tests.test_admin import staff
from tests.testapp.models import Post

BINGBOT_UA = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"
YANDEX_UA = "Mozilla/5.0 (compatible; YandexBot/3.0; +http://yandex.com/bots)"
BROWSER_UA = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
URL = "https://www.example.com/posts/hello/"
RESOLVER = "tests.crawl_dns.TableResolver"
CRAWL_ON: dict[str, Any] = {"CRAWL": {"ENABLED": True, "RESOLVER": RESOLVER}}

pytestmark = [pytest.mark.django_db, pytest.mark.indexnow(**CRAWL_ON)]


@pytest.fixture(autouse=True)
def _post_pages(settings: Any) -> None:
    """The suite's URLs and the posts' pages (200 for a published post, else 404)."""
    settings.ROOT_URLCONF = "tests.urls_preflight"


def published(slug: str = "hello") -> Post:
    with capture_submissions():  # its own flush is not what these tests look at
        return Post.objects.create(title=slug.title(), slug=slug, status=Post.PUBLISHED)


def accepted(url: str = URL, *, ago: float = 240, engine: str = "bing", **fields: Any) -> Delivery:
    """An accepted POST of ``url``, ``ago`` seconds ago, as the history records one with
    crawl receipts on (the end-to-end test makes a real one)."""
    at = timezone.now() - timedelta(seconds=ago)
    fields.setdefault("batch_id", new_batch_id(at=at.timestamp()))
    delivery = make_delivery(urls=url, engine=engine, sent_at=at, flushed_at=at, **fields)
    wait_for_crawlers(delivery)
    return delivery


def fetch(
    client: Client,
    path: str = "/posts/hello/",
    *,
    ua: str = BINGBOT_UA,
    address: str = BINGBOT,
    **headers: Any,
) -> int:
    response = client.get(
        path, HTTP_USER_AGENT=ua, REMOTE_ADDR=address, HTTP_HOST="www.example.com", **headers
    )
    return int(response.status_code)


def drained(resolver: TableResolver | None = None) -> list[CrawlReceipt]:
    conf = get_settings()
    return drain(connection(conf.queue_name), conf, resolver=resolver or TableResolver())


def receipts() -> list[tuple[str, str, int, str]]:
    return list(
        CrawlReceipt.objects.order_by("fetched_at").values_list(
            "url", "crawler", "status", "address"
        )
    )


# --------------------------------------------------------------------------- end to end


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_verified_bingbot_fetch_is_recorded_by_the_worker_and_shown_everywhere(
    start_worker, redis_conn, engine
):
    # A real save, delivered by a real worker: the engine accepts it.
    post = Post.objects.create(title="Hello", slug="hello", status=Post.PUBLISHED)
    start_worker(CRAWL_ON, extra_env=FAST_SWEEP)
    wait_for_count(Delivery.objects.filter(outcome="accepted").count, 1)
    delivery = Delivery.objects.get()
    assert engine.posted_urls() == [URL]

    assert fetch(Client()) == 200
    wait_for_count(CrawlReceipt.objects.count, 1)

    receipt = CrawlReceipt.objects.get()
    assert (receipt.url, receipt.crawler, receipt.engine, receipt.status) == (
        URL,
        "bingbot",
        delivery.engine,
        200,
    )
    assert (receipt.delivery_id, receipt.batch_id) == (delivery.pk, delivery.batch_id)
    assert receipt.address == BINGBOT and receipt.accepted_at == delivery.sent_at
    assert 0 <= receipt.after < 300
    assert redis_conn.xlen(STREAM_KEY) == 0
    shown = f"fetched by Bingbot {after_text(receipt.after)} after acceptance"

    # The delivery record in the admin.
    client = Client()
    staff(client, "indexnow.view_delivery", "testapp.change_post")
    record = client.get(f"/admin/indexnow/delivery/{delivery.pk}/change/").content.decode()
    assert shown in record
    # The object's IndexNow panel.
    page = client.get(f"/admin/testapp/post/{post.pk}/change/").content.decode()
    panel = page[page.index('id="indexnow-status"') :]
    panel = panel[: panel.index("</div>")]
    assert "last fetched" in panel and shown in panel
    # indexnow_explain: the last fetch per crawler.
    out = StringIO()
    call_command("indexnow_explain", "testapp.Post", str(post.pk), "--json", stdout=out)
    [last] = json.loads(out.getvalue())["crawled"]
    assert (last["url"], last["crawler"], last["engine"], last["status"]) == (
        URL,
        "bingbot",
        delivery.engine,
        200,
    )
    out = StringIO()
    call_command("indexnow_explain", "testapp.Post", str(post.pk), stdout=out)
    assert "Last fetch per crawler:" in out.getvalue()
    assert f"Bingbot (bingbot) {last['fetched_at']} {URL}: " in out.getvalue()
    # indexnow_report, as JSON and as text.
    out = StringIO()
    call_command("indexnow_report", "--json", stdout=out)
    [model] = [m for m in json.loads(out.getvalue())["models"] if m["model"] == "testapp.Post"]
    assert model["crawled"] == [
        {
            "engine": delivery.engine,
            "accepted": 1,
            "fetched": 1,
            "p50_seconds": receipt.after,
            "p95_seconds": receipt.after,
            "not_fetched": 0,
            "crawlers": {"bingbot": 1},
        }
    ]
    out = StringIO()
    call_command("indexnow_report", stdout=out)
    assert f"  crawled after acceptance by {delivery.engine}: 1 of 1 URL(s) fetched (p50 " in (
        out.getvalue()
    )


def test_the_admin_record_says_how_long_after_the_acceptance(client, redis_conn):
    published()
    delivery = accepted(ago=240)
    fetch(client)
    fetch(client, "/posts/gone/")
    drained()
    staff(client, "indexnow.view_delivery")
    record = client.get(f"/admin/indexnow/delivery/{delivery.pk}/change/").content.decode()
    assert ">Crawled</h2>" in record
    assert "fetched by Bingbot 4 min after acceptance" in record
    assert "Yandex" not in record


@pytest.mark.parametrize(
    ("crawl", "dry_run", "waits"), [(True, False, 2), (False, False, 0), (True, True, 0)]
)
def test_an_accepted_post_waits_for_crawlers_while_crawl_receipts_are_on(
    engine, history_on, indexnow_settings, crawl, dry_run, waits
):
    from indexnow_django.models import CrawlWait
    from indexnow_django.sending.send import deliver_now

    indexnow_settings(CRAWL={"ENABLED": crawl}, DRY_RUN=dry_run)
    deliver_now(["/posts/a/", "/posts/b/"])
    delivery = Delivery.objects.get()
    assert delivery.outcome == ("dry_run" if dry_run else "accepted")
    assert (
        sorted(CrawlWait.objects.values_list("url", "delivery_id", "accepted_at"))
        == [
            (f"https://www.example.com/posts/{slug}/", delivery.pk, delivery.sent_at)
            for slug in "ab"
        ][:waits]
    )


def test_the_report_counts_urls_accepted_and_not_fetched(client, redis_conn):
    published()
    published("other")
    accepted(ago=600, engine="bing")
    accepted("https://www.example.com/posts/other/", ago=300, engine="bing")
    accepted("https://www.example.com/by-hand/", ago=300, engine="yandex")
    fetch(client)
    drained()
    out = StringIO()
    call_command("indexnow_report", "--json", stdout=out)
    models = {m["model"]: m for m in json.loads(out.getvalue())["models"]}
    [bing] = models["testapp.Post"]["crawled"]
    assert (bing["engine"], bing["accepted"], bing["fetched"], bing["not_fetched"]) == (
        "bing",
        2,
        1,
        1,
    )
    assert 600 <= bing["p50_seconds"] < 900
    [yandex] = models["other URLs"]["crawled"]
    assert (yandex["engine"], yandex["accepted"], yandex["fetched"]) == ("yandex", 1, 0)


@pytest.mark.indexnow(CRAWL={"ENABLED": False})
def test_with_crawl_receipts_off_the_report_and_the_record_say_nothing_of_crawlers(client):
    delivery = make_delivery(urls=URL)
    out = StringIO()
    call_command("indexnow_report", "--json", stdout=out)
    assert all("crawled" not in m for m in json.loads(out.getvalue())["models"])
    staff(client, "indexnow.view_delivery")
    record = client.get(f"/admin/indexnow/delivery/{delivery.pk}/change/").content.decode()
    assert ">Crawled</h2>" not in record and "fetched by" not in record


# --------------------------------------------------------------------------- what counts


def test_a_spoofed_user_agent_from_an_unverified_address_records_nothing(client, redis_conn):
    published()
    accepted()
    for address in (SPOOFER, FORGED_PTR, "192.0.2.77", "not-an-address"):
        fetch(client, address=address)
    assert redis_conn.xlen(STREAM_KEY) == 4  # noticed, to be verified
    assert drained() == []
    assert receipts() == []
    assert redis_conn.xlen(STREAM_KEY) == 0


def test_a_url_never_submitted_records_nothing(client, redis_conn):
    published("never-sent")
    accepted()  # another URL
    fetch(client, "/posts/never-sent/")
    assert drained() == [] and receipts() == []


def test_a_fetch_before_the_acceptance_records_nothing(client, redis_conn):
    published()
    fetch(client)
    accepted(ago=-5)  # accepted after the fetch (the drain runs later)
    assert drained() == [] and receipts() == []


def test_an_acceptance_older_than_the_days_records_nothing(client, redis_conn):
    published()
    accepted(ago=8 * 86400)  # CRAWL["DAYS"] is 7
    fetch(client)
    assert drained() == [] and receipts() == []


def test_only_the_first_fetch_after_the_latest_acceptance_counts(client, redis_conn):
    published()
    accepted(ago=600)
    fetch(client)
    fetch(client)
    [first] = drained()
    fetch(client)
    assert drained() == []
    assert CrawlReceipt.objects.count() == 1
    # A new accepted POST starts a new wait.
    again = accepted(ago=1)
    fetch(client)
    [second] = drained()
    assert second.delivery_id == again.pk and second.after < first.after
    assert CrawlReceipt.objects.count() == 2
    # Another crawler has its own first fetch.
    yandex = fetch(client, ua=YANDEX_UA, address=crawl_dns.YANDEXBOT)
    assert yandex == 200
    [third] = drained()
    assert (third.crawler, third.engine, third.address) == ("yandexbot", "bing", "2001:db8::5")


def test_the_crawlers_own_engine_acceptance_of_a_flush_is_the_one_it_follows(client, redis_conn):
    published()
    batch = new_batch_id()
    own = accepted(ago=60, engine="bing", batch_id=batch)
    accepted(ago=59, engine="yandex", batch_id=batch)  # the same flush, a second later
    fetch(client)
    [receipt] = drained()
    assert (receipt.delivery_id, receipt.engine) == (own.pk, "bing")


def test_a_crawler_that_gets_a_404_records_404(client, redis_conn):
    accepted("https://www.example.com/posts/gone/")
    assert fetch(client, "/posts/gone/") == 404
    [receipt] = drained()
    assert (receipt.url, receipt.status) == ("https://www.example.com/posts/gone/", 404)


def test_the_scheme_of_the_request_need_not_be_the_submitted_one(client, redis_conn):
    # Behind a proxy that ends TLS, Django may see http:// for the https:// URL submitted.
    published()
    accepted()
    fetch(client, secure=False)
    [receipt] = drained()
    assert receipt.url == URL


def test_the_signal_is_sent_once_per_recorded_fetch_with_its_fields(client, redis_conn):
    published()
    delivery = accepted(ago=120)
    sent: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        sent.append(kwargs)

    signals.url_crawled.connect(receiver, dispatch_uid="test-crawl")
    try:
        fetch(client)
        fetch(client)
        [receipt] = drained()
        fetch(client)
        drained()
    finally:
        signals.url_crawled.disconnect(dispatch_uid="test-crawl")
    assert [{k: v for k, v in s.items() if k != "signal"} for s in sent] == [
        {
            "url": URL,
            "crawler": "bingbot",
            "engine": "bing",
            "at": receipt.fetched_at,
            "after": receipt.after,
            "status": 200,
        }
    ]
    seconds = (receipt.fetched_at - delivery.sent_at).total_seconds()
    assert abs(seconds - receipt.after) < 0.01


# --------------------------------------------------------------------------- the request


def test_a_visitor_costs_no_write_and_leaves_no_address(client, redis_conn):
    published()
    accepted()
    fetch(client, ua=BROWSER_UA, address=VISITOR)
    fetch(client, ua="", address=VISITOR)
    assert redis_conn.xlen(STREAM_KEY) == 0


def test_only_gets_and_heads_are_noticed(client, redis_conn):
    published()
    client.post("/posts/hello/", HTTP_USER_AGENT=BINGBOT_UA, REMOTE_ADDR=BINGBOT)
    client.head("/posts/hello/", HTTP_USER_AGENT=BINGBOT_UA, REMOTE_ADDR=BINGBOT)
    assert redis_conn.xlen(STREAM_KEY) == 1


@pytest.mark.indexnow(CRAWL={"ENABLED": False})
def test_with_crawl_receipts_off_nothing_is_noticed(client, redis_conn):
    published()
    accepted()
    fetch(client)
    assert redis_conn.xlen(STREAM_KEY) == 0


@pytest.mark.django_db(transaction=True)  # the view runs in another thread
def test_the_async_middleware_notices_a_crawler_too(redis_conn):
    published()
    accepted()

    async def go() -> int:
        from asgiref.testing import ApplicationCommunicator
        from django.core.handlers.asgi import ASGIHandler

        scope = {
            "type": "http",
            "asgi": {"version": "3.0"},
            "http_version": "1.1",
            "method": "GET",
            "scheme": "https",
            "path": "/posts/hello/",
            "raw_path": b"/posts/hello/",
            "query_string": b"",
            "root_path": "",
            "headers": [(b"host", b"www.example.com"), (b"user-agent", BINGBOT_UA.encode())],
            "client": (BINGBOT, 40000),
            "server": ("www.example.com", 443),
        }
        server = ApplicationCommunicator(ASGIHandler(), scope)
        await server.send_input({"type": "http.request", "body": b""})
        start = await server.receive_output(10)
        await server.receive_output(10)  # the body
        await server.send_input({"type": "http.disconnect"})
        await server.wait(10)
        return int(start["status"])

    assert asyncio.run(go()) == 200
    assert [r.crawler for r in drained()] == ["bingbot"]


def test_the_proxy_header_is_read_only_when_configured(client, redis_conn, indexnow_settings):
    published()
    accepted()
    # Not configured: a client's X-Forwarded-For is not believed (it could name anyone).
    fetch(client, address=PROXY, HTTP_X_FORWARDED_FOR=BINGBOT)
    assert drained() == []
    # Configured: the last entry, the one the site's own proxy added.
    indexnow_settings(CRAWL={**CRAWL_ON["CRAWL"], "CLIENT_IP_HEADER": "X-Forwarded-For"})
    fetch(client, address=PROXY, HTTP_X_FORWARDED_FOR=f"{SPOOFER}, {BINGBOT}")
    [receipt] = drained()
    assert receipt.address == BINGBOT
    # What a client put first is not the address.
    CrawlReceipt.objects.all().delete()
    fetch(client, address=PROXY, HTTP_X_FORWARDED_FOR=f"{BINGBOT}, {SPOOFER}")
    assert drained() == []
    # Configured but absent (a request that did not come through the proxy): REMOTE_ADDR.
    fetch(client, address=BINGBOT)
    assert [r.address for r in drained()] == [BINGBOT]


@pytest.mark.indexnow(CRAWL={"CLIENT_IP_HEADER": "CF-Connecting-IP"})
def test_cloudflares_header(client, redis_conn):
    published()
    accepted()
    fetch(client, address=PROXY, HTTP_CF_CONNECTING_IP=BINGBOT)
    assert [r.address for r in drained()] == [BINGBOT]


# --------------------------------------------------------------------------- verification


def test_dns_verification_needs_the_crawlers_domain_and_the_address_back():
    conf = get_settings()
    resolver = TableResolver()
    verifier = Verifier(conf, resolver, _cache())
    assert verifier.verified(BINGBOT, "bingbot")
    assert not verifier.verified(BINGBOT, "yandexbot")  # a Bing host is no YandexBot
    assert verifier.verified(crawl_dns.YANDEXBOT, "yandexbot")
    assert not verifier.verified(SPOOFER, "bingbot")  # not search.msn.com
    assert not verifier.verified(FORGED_PTR, "bingbot")  # its name does not resolve back
    assert not verifier.verified(VISITOR, "bingbot")  # no PTR at all
    assert not verifier.verified("bingbot.example", "bingbot")  # not an address


def test_a_dns_answer_is_looked_up_once_per_address_and_cached_for_a_day():
    conf = get_settings()
    first = TableResolver()
    for _ in range(3):
        assert Verifier(conf, first, _cache()).verified(BINGBOT, "bingbot")
        assert not Verifier(conf, first, _cache()).verified(SPOOFER, "bingbot")
    assert first.calls == [
        ("PTR", BINGBOT),
        ("A", "msnbot-198-51-100-7.search.msn.com."),
        ("PTR", SPOOFER),
        ("A", "crawler.spoofer.example"),
    ]
    # Another process of the same cache asks nothing either.
    later = TableResolver()
    assert Verifier(conf, later, _cache()).verified(BINGBOT, "bingbot")
    assert later.calls == []
    assert _cache().get(f"indexnow:crawl:dns:{BINGBOT}") == "msnbot-198-51-100-7.search.msn.com"


@pytest.mark.indexnow(CRAWL={"RANGES": {"bingbot": ["40.77.167.0/24"]}})
def test_ranges_verify_without_dns():
    resolver = TableResolver()
    verifier = Verifier(get_settings(), resolver, _cache())
    assert verifier.verified("40.77.167.12", "bingbot")
    assert not verifier.verified("40.77.167.12", "yandexbot") or resolver.calls
    # The shipped ranges: Seznam's published SeznamBot addresses, IPv4 and IPv6.
    calls = len(resolver.calls)
    assert verifier.verified("77.75.77.123", "seznambot")
    assert verifier.verified("2a02:598:64:8a00::3100:7", "seznambot")
    assert len(resolver.calls) == calls


def test_the_shipped_ranges_parse_and_name_known_crawlers():
    assert set(PUBLISHED_RANGES) == set(CRAWLERS)
    parsed = networks()
    assert sum(len(found) for found in parsed.values()) == sum(
        len(found) for found in PUBLISHED_RANGES.values()
    )
    for name, found in parsed.items():
        for network, text in zip(found, PUBLISHED_RANGES[name], strict=True):
            assert str(network) == text, f"{name}: {text} is not a network address"


@pytest.mark.parametrize(
    ("user_agent", "crawler"),
    [
        (BINGBOT_UA, "bingbot"),
        ("Mozilla/5.0 AppleWebKit/537.36 (KHTML, like Gecko; compatible; bingbot/2.0)", "bingbot"),
        (YANDEX_UA, "yandexbot"),
        ("Mozilla/5.0 (compatible; SeznamBot/4.0; +https://o-seznam.cz/napoveda/)", "seznambot"),
        ("Mozilla/5.0 (compatible; Yeti/1.1; +https://naver.me/spd)", "yeti"),
        ("Mozilla/5.0 (compatible; YepBot/1.0; +http://yep.com/yepbot/)", "yepbot"),
        (BROWSER_UA, None),
        ("Mozilla/5.0 (compatible; Googlebot/2.1; +http://www.google.com/bot.html)", None),
        ("Yetiwear shop crawler", None),
        ("Mozilla/5.0 (compatible; Bingbot-like scraper)", None),
    ],
)
def test_the_user_agent_names_the_crawler(user_agent, crawler):
    found = crawler_of(user_agent)
    assert (found.name if found else None) == crawler


# --------------------------------------------------------------------------- retention


def test_receipts_go_with_the_history(client, redis_conn):
    published()
    accepted(ago=15 * 86400, batch_id="old-batch")  # older than the history's 14 days
    recent = accepted(ago=60)
    fetch(client)
    [receipt] = drained()
    # A receipt of the old acceptance, as one recorded then would be.
    CrawlReceipt.objects.create(
        **{
            **{f.attname: getattr(receipt, f.attname) for f in CrawlReceipt._meta.concrete_fields},
            "id": None,
            "batch_id": "old-batch",
            "accepted_at": timezone.now() - timedelta(days=15),
        }
    )
    purge(14)
    assert list(CrawlReceipt.objects.values_list("batch_id", flat=True)) == [recent.batch_id]


# --------------------------------------------------------------------------- checks


def errors(settings: Any, crawl: Any) -> list[checks.CheckMessage]:
    from indexnow_django.checks import check_settings

    settings.INDEXNOW = {**settings.INDEXNOW, "CRAWL": crawl}
    return list(check_settings())


NAMES = "bingbot, yandexbot, seznambot, yeti, yepbot"


def test_every_crawl_key_is_checked(settings):
    assert errors(settings, {"ENABLED": True, "DAYS": 7, "RANGES": {}}) == []
    assert errors(
        settings,
        {
            "ENABLED": "yes",
            "DAYS": 0,
            "RANGES": {"googlebot": ["66.249.64.0/19"], "bingbot": "40.77.167.0/24"},
            "CLIENT_IP_HEADER": "X Forwarded For",
            "RESOLVER": "tests.crawl_dns.NoSuchResolver",
            "DAY": 7,
        },
    ) == [
        checks.Error(
            "INDEXNOW['CRAWL'] has an unknown key 'DAY'.",
            hint="Did you mean 'DAYS'? Allowed keys: ENABLED, DAYS, RANGES, CLIENT_IP_HEADER, "
            "RESOLVER.",
            id="indexnow.E002",
        ),
        checks.Error(
            "INDEXNOW['CRAWL']['ENABLED'] must be True or False, not 'yes'.", id="indexnow.E010"
        ),
        checks.Error(
            "INDEXNOW['CRAWL']['DAYS'] must be a whole number of days >= 1, not 0.",
            id="indexnow.E024",
        ),
        checks.Error(
            "INDEXNOW['CRAWL']['RANGES'] names an unknown crawler 'googlebot'.",
            hint=f"Crawler names: {NAMES}.",
            id="indexnow.E024",
        ),
        checks.Error(
            "INDEXNOW['CRAWL']['RANGES']['bingbot'] must be a list of address ranges, not str.",
            hint="For example {'bingbot': ['40.77.167.0/24']}.",
            id="indexnow.E024",
        ),
        checks.Error(
            "INDEXNOW['CRAWL']['CLIENT_IP_HEADER'] must be None or a request header name, not "
            "'X Forwarded For'.",
            hint="For example 'X-Forwarded-For', 'X-Real-IP' or 'CF-Connecting-IP'; None reads "
            "REMOTE_ADDR.",
            id="indexnow.E024",
        ),
        checks.Error(
            "INDEXNOW['CRAWL']['RESOLVER'] 'tests.crawl_dns.NoSuchResolver' cannot be imported "
            '(Module "tests.crawl_dns" does not define a "NoSuchResolver" attribute/class).',
            hint="Give the dotted path of a class with reverse(address) and forward(name), or "
            "None for the system's resolver.",
            id="indexnow.E024",
        ),
    ]


def test_bad_address_ranges_are_named(settings):
    hint = (
        "Give IPv4 or IPv6 ranges in CIDR notation, such as '40.77.167.0/24' or "
        "'2a02:598:64:8a00::3100:0/123'."
    )
    assert errors(
        settings,
        {
            "RANGES": {
                "bingbot": ["40.77.167.0/24", "40.77.167.5/24", "40.77.300.0/24", "40.77.167.9"]
            }
        },
    ) == [
        checks.Error(
            f"INDEXNOW['CRAWL']['RANGES']['bingbot'] holds {bad!r}, which is not an address range.",
            hint=hint,
            id="indexnow.E024",
        )
        for bad in ("40.77.167.5/24", "40.77.300.0/24", "40.77.167.9")
    ]
    assert errors(settings, {"RANGES": ["40.77.167.0/24"]}) == [
        checks.Error(
            "INDEXNOW['CRAWL']['RANGES'] must be a dict of crawler names to lists of address "
            "ranges, not list.",
            hint=f"For example {{'bingbot': ['40.77.167.0/24']}}; crawler names: {NAMES}.",
            id="indexnow.E024",
        )
    ]
    assert errors(settings, "on") == [
        checks.Error(
            "INDEXNOW['CRAWL'] must be a dict, not str.",
            hint="Allowed keys: ENABLED, DAYS, RANGES, CLIENT_IP_HEADER, RESOLVER.",
            id="indexnow.E012",
        )
    ]


def _cache() -> Any:
    from django.core.cache import caches

    return caches[get_settings().debounce_cache]


def test_a_site_without_the_worker_that_records_receipts_is_warned(settings):
    from indexnow_django.checks import check_crawl_worker

    assert check_crawl_worker() == []  # rq's queue, this app's worker class
    settings.RQ = {"WORKER_CLASS": "rq.worker.Worker"}
    assert check_crawl_worker() == [
        checks.Warning(
            "INDEXNOW['CRAWL']['ENABLED'] is True, but rq's worker class is not this app's: "
            "the crawlers' fetches are never verified nor recorded.",
            hint='Add RQ = {"WORKER_CLASS": "indexnow_django.worker.Worker"}: its workers '
            "record the crawl receipts.",
            id="indexnow.W050",
        )
    ]
    settings.INDEXNOW = {**settings.INDEXNOW, "DISPATCH": "sync"}
    assert check_crawl_worker() == [
        checks.Warning(
            "INDEXNOW['CRAWL']['ENABLED'] is True, but dispatch does not go to rq's queue "
            "(DISPATCH is 'sync'): the crawlers' fetches are never verified nor recorded.",
            hint="Crawl receipts are kept in the Redis of QUEUE['NAME'] and recorded by rq's "
            "worker: put 'default' in RQ_QUEUES, use DISPATCH 'auto' or 'queue', and run the "
            'worker with RQ = {"WORKER_CLASS": "indexnow_django.worker.Worker"}.',
            id="indexnow.W050",
        )
    ]
    settings.INDEXNOW = {**settings.INDEXNOW, "CRAWL": {"ENABLED": False}}
    assert check_crawl_worker() == []
