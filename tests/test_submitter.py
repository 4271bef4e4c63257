"""deliver_now: debounce, group by host, split in batches, one POST per engine."""

from collections import Counter

import pytest

from indexnow_django.conf import get_settings
from indexnow_django.protocol.client import Outcome
from indexnow_django.sending.send import deliver_now
from indexnow_django.testing import LoopbackEngine, Reply
from tests.needs import UNTHROTTLED

# The throttle has tests of its own (tests/test_throttle.py): here every POST goes out at once.
pytestmark = pytest.mark.indexnow(**UNTHROTTLED)

KEY = "test-key-0123456789"


def test_one_url_gives_one_post_with_the_exact_body(engine):
    report = deliver_now(["/a/"])
    assert [r.outcome for r in report.results] == [Outcome.ACCEPTED]
    [post] = engine.posts
    assert post.json == {
        "host": "www.example.com",
        "key": KEY,
        "urlList": ["https://www.example.com/a/"],
    }


def test_key_location_is_sent(engine, indexnow_settings):
    indexnow_settings(KEY_LOCATION="https://cdn.example.com/k.txt")
    deliver_now(["/a/"])
    assert engine.posts[0].json["keyLocation"] == "https://cdn.example.com/k.txt"


def test_10001_urls_give_10000_and_1(engine):
    urls = [f"/p/{i}/" for i in range(10_001)]
    report = deliver_now(urls)
    assert sorted(len(p.urls) for p in engine.posts) == [1, 10_000]  # sent at once
    assert sorted(engine.posted_urls()) == sorted(
        f"https://www.example.com/p/{i}/" for i in range(10_001)
    )
    assert report.sent_count == 10_001


def test_max_urls_setting_splits(engine, indexnow_settings):
    indexnow_settings(BATCH={"MAX_URLS": 2})
    deliver_now(["/1/", "/2/", "/3/", "/4/", "/5/"])
    assert sorted((len(p.urls) for p in engine.posts), reverse=True) == [2, 2, 1]


def test_two_hosts_give_two_posts(engine, indexnow_settings):
    indexnow_settings(HOSTS=["www.example.com", "blog.example.com"])
    deliver_now(
        ["https://www.example.com/a/", "https://blog.example.com/b/", "https://www.example.com/c/"]
    )
    bodies = sorted((p.json["host"], p.json["urlList"]) for p in engine.posts)
    assert bodies == [
        ("blog.example.com", ["https://blog.example.com/b/"]),
        ("www.example.com", ["https://www.example.com/a/", "https://www.example.com/c/"]),
    ]


def test_per_host_keys_are_used(engine, indexnow_settings):
    indexnow_settings(
        HOSTS={
            "www.example.com": {},
            "blog.example.com": {
                "KEY": "blog-key-abcdefgh",
                "KEY_LOCATION": "https://blog.example.com/k.txt",
            },
        }
    )
    deliver_now(["https://blog.example.com/b/", "https://www.example.com/a/"])
    keys = {p.json["host"]: (p.json["key"], p.json.get("keyLocation")) for p in engine.posts}
    assert keys == {
        "blog.example.com": ("blog-key-abcdefgh", "https://blog.example.com/k.txt"),
        "www.example.com": (KEY, None),
    }


@pytest.mark.django_db  # the POST is recorded in the history
def test_foreign_host_is_dropped_with_one_warning(engine, caplog):
    report = deliver_now(["https://evil.example/x", "/ok/", "ftp://www.example.com/f"])
    assert engine.posted_urls() == ["https://www.example.com/ok/"]
    assert [url for url, _ in report.dropped] == [
        "https://evil.example/x",
        "ftp://www.example.com/f",
    ]
    warnings = [r for r in caplog.records if r.levelname == "WARNING"]
    assert len(warnings) == 1
    assert (
        "evil.example" in warnings[0].getMessage()
        and "ftp://www.example.com/f" in warnings[0].getMessage()
    )


def test_duplicates_fragment_idn_and_case(engine, indexnow_settings):
    indexnow_settings(HOSTS=["www.example.com", "bücher.example"])
    deliver_now(
        [
            "/a/",
            "https://WWW.EXAMPLE.COM/a/#comments",
            "https://www.example.com:443/a/",
            "https://Bücher.example/x",
        ]
    )
    assert sorted(engine.posted_urls()) == [
        "https://www.example.com/a/",
        "https://xn--bcher-kva.example/x",
    ]
    assert {p.json["host"] for p in engine.posts} == {"www.example.com", "xn--bcher-kva.example"}


def test_empty_list_sends_nothing(engine):
    report = deliver_now([])
    assert report.results == [] and engine.posts == []


def test_urls_are_built_from_settings_not_from_a_request_host(engine, indexnow_settings):
    indexnow_settings(BASE_URL="https://WWW.Example.com/")
    deliver_now(["relative/path"])
    assert engine.posted_urls() == ["https://www.example.com/relative/path"]


def test_debounce_within_ttl(engine):
    deliver_now(["/a/", "/b/"])
    report = deliver_now(["/a/", "/c/"])
    assert [p.urls for p in engine.posts] == [
        ["https://www.example.com/a/", "https://www.example.com/b/"],
        ["https://www.example.com/c/"],
    ]
    assert report.debounced_count == 1


def test_debounce_after_ttl(engine, indexnow_settings, monkeypatch):
    from indexnow_django.sending import send
    from tests.test_debounce import Clock

    indexnow_settings(DEBOUNCE={"TTL": 1})
    clock = Clock()
    made = send.make_debounce

    def on_the_test_clock(conf):
        store = made(conf)
        store.clock = clock
        return store

    monkeypatch.setattr(send, "make_debounce", on_the_test_clock)
    deliver_now(["/a/"])
    deliver_now(["/a/"])
    assert len(engine.posts) == 1
    clock.advance(1.2)  # past the TTL, on the store's clock
    deliver_now(["/a/"])
    assert len(engine.posts) == 2


def test_debounce_disabled_with_zero_ttl(engine, indexnow_settings):
    indexnow_settings(DEBOUNCE={"TTL": 0})
    deliver_now(["/a/"])
    deliver_now(["/a/"])
    assert len(engine.posts) == 2


def test_force_ignores_debounce(engine):
    deliver_now(["/a/"])
    deliver_now(["/a/"], force=True)
    assert len(engine.posts) == 2


def test_rejected_urls_are_not_debounced(engine):
    engine.queue_replies(Reply(503))
    first = deliver_now(["/a/"])
    assert first.retryable and first.retryable[0].status == 503
    second = deliver_now(["/a/"])
    assert second.accepted
    assert len(engine.posts) == 2


def test_debounce_uses_one_round_trip_per_batch(engine, indexnow_settings):
    """The cache is asked with get_many/set_many per batch, never once per URL."""
    from django.core.cache import caches

    calls = []
    depth = [0]
    cache = caches["default"]
    names = ("get", "get_many", "set_many", "add", "set", "delete_many")
    for name in names:
        original = getattr(cache, name)

        def spy(*args, _name=name, _original=original, **kwargs):
            if depth[0] == 0:  # count the calls we make, not the backend's own
                calls.append(_name)
            depth[0] += 1
            try:
                return _original(*args, **kwargs)
            finally:
                depth[0] -= 1

        setattr(cache, name, spy)
    try:
        indexnow_settings(BATCH={"MAX_URLS": 250})
        deliver_now([f"/p/{i}/" for i in range(500)])
    finally:
        for name in names:
            delattr(cache, name)
    # Per batch: claim (look the URLs up, write the claim and its URLs), then record;
    # the second batch is claimed while the first one is posted.
    assert calls[:2] == ["get_many", "set_many"]
    assert Counter(calls) == {"get_many": 2, "set_many": 6}
    assert len(engine.posts) == 2


def test_two_engines_each_get_a_post_and_their_own_debounce(engine, indexnow_settings):
    with LoopbackEngine() as second:
        indexnow_settings(ENGINES=[engine.url, second.url])
        second.queue_replies(Reply(429))
        report = deliver_now(["/a/"])
        assert sorted(r.outcome.value for r in report.results) == ["accepted", "retry"]
        assert engine.posted_urls() == second.posted_urls() == ["https://www.example.com/a/"]
        # Accepted by the first only: a second delivery goes to the second only.
        deliver_now(["/a/"])
        assert len(engine.posts) == 1 and len(second.posts) == 2


def test_engines_filter(engine, indexnow_settings):
    with LoopbackEngine() as second:
        indexnow_settings(ENGINES=[engine.url, second.url])
        deliver_now(["/a/"], engines=[second.url.split("/", 2)[2]])  # its name
        assert engine.posts == [] and len(second.posts) == 1


def test_dry_run_logs_and_sends_nothing(engine, indexnow_settings, caplog):
    indexnow_settings(DRY_RUN=True)
    report = deliver_now(["/a/"])
    assert engine.posts == []
    assert "dry run" in caplog.text
    # Its POST line says dry_run, as the history does, not accepted.
    [line] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("IndexNow POST")]
    assert line.endswith("count=1 status=- outcome=dry_run"), line
    # A dry run does not mark URLs as sent.
    indexnow_settings(DRY_RUN=False)
    deliver_now(["/a/"])
    assert len(engine.posts) == 1
    assert report.results[0].message == "dry run: not sent"


def test_disabled_does_nothing(engine, indexnow_settings):
    indexnow_settings(ENABLED=False)
    assert deliver_now(["/a/"]).results == []
    assert engine.posts == []


@pytest.mark.parametrize("status", [400, 403, 422])
def test_final_rejection_is_reported_not_raised(engine, status):
    engine.queue_replies(Reply(status, "nope"))
    report = deliver_now(["/a/"])
    [result] = report.rejected
    assert result.status == status and "nope" in result.message


def test_settings_object_masks_nothing_it_should_not(indexnow_settings):
    conf = get_settings()
    assert conf.hosts["www.example.com"].key_file_url == f"https://www.example.com/{KEY}.txt"


def test_two_endpoints_on_one_host_are_two_engines(engine, indexnow_settings):
    """Each endpoint keeps its own debounce record: the second is not skipped
    because the first accepted, and it gets the URLs again after a 429."""
    first, second = f"{engine.url}/e1", f"{engine.url}/e2"
    indexnow_settings(ENGINES=[first, second])
    engine.queue_replies(Reply(200), Reply(429))
    report = deliver_now(["/a/"])  # the two POSTs at once: either may get the 429
    assert sorted((p.path, p.urls) for p in engine.posts) == [
        ("/indexnow/e1", ["https://www.example.com/a/"]),
        ("/indexnow/e2", ["https://www.example.com/a/"]),
    ]
    outcomes = {r.engine.endpoint: r.outcome.value for r in report.results}
    assert sorted(outcomes.values()) == ["accepted", "retry"]
    [refused] = [endpoint for endpoint, outcome in outcomes.items() if outcome == "retry"]
    engine.reset()
    deliver_now(["/a/"])
    assert [p.path for p in engine.posts] == ["/indexnow/" + refused.rsplit("/", 1)[1]]


def test_a_url_that_changed_side_is_sent_again_within_the_ttl(engine):
    deliver_now(["/a/", "/b/"])  # published
    report = deliver_now(["/a/", "/b/"], gone=["/a/"])  # /a/ unpublished, /b/ saved again
    assert report.debounced_count == 1
    deliver_now(["/a/"], gone=["https://www.example.com/a/"])  # deleted: still gone
    deliver_now(["/a/"])  # published again
    assert [p.urls for p in engine.posts] == [
        ["https://www.example.com/a/", "https://www.example.com/b/"],
        ["https://www.example.com/a/"],
        ["https://www.example.com/a/"],
    ]


def test_normalized_urls_are_taken_as_they_are(engine):
    report = deliver_now(["https://www.example.com/a/"], normalized=True)
    assert report.sent_count == 1 and engine.posted_urls() == ["https://www.example.com/a/"]
