"""The HTTP client against a real HTTP server on 127.0.0.1."""

import logging
import re
import socket
import threading
import time
import tracemalloc
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime
from io import StringIO

import pytest

from indexnow_django import __version__
from indexnow_django.protocol.client import (
    ENGINE_ENDPOINTS,
    Engine,
    IndexNowClient,
    Outcome,
    PostResult,
    RetryPolicy,
    parse_retry_after,
    resolve_engine,
)
from indexnow_django.testing import Reply
from tests.services import free_port

URLS = ["https://www.example.com/a/"]


@pytest.fixture
def target(engine):
    return Engine("loopback", engine.url)


def post(target, urls=URLS, **kwargs):
    client = IndexNowClient(timeout=kwargs.pop("timeout", 3))
    return client.post(target, "www.example.com", "test-key-0123456789", urls, **kwargs)


def test_one_post_with_exact_body_and_headers(engine, target):
    result = post(target)
    assert result.outcome is Outcome.ACCEPTED and result.status == 200
    [request] = engine.posts
    assert request.path == "/indexnow"
    assert request.json == {
        "host": "www.example.com",
        "key": "test-key-0123456789",
        "urlList": ["https://www.example.com/a/"],
    }
    assert request.headers["Content-Type"] == "application/json; charset=utf-8"
    assert request.headers["User-Agent"].startswith(f"indexnow-django/{__version__}")


def test_key_location_is_sent_when_set(engine, target):
    post(target, key_location="https://www.example.com/keys/k.txt")
    assert engine.posts[0].json["keyLocation"] == "https://www.example.com/keys/k.txt"


@pytest.mark.parametrize("status", [200, 202])
def test_accepted(engine, target, status):
    engine.queue_replies(Reply(status))
    assert post(target).outcome is Outcome.ACCEPTED


@pytest.mark.parametrize(
    ("status", "body", "words"),
    [
        (400, "Invalid format", "answered 400 (bad request: invalid format): Invalid format"),
        (403, "Key not valid", "answered 403 (forbidden: the key is not valid"),
        (422, "URLs don't belong to the host", "answered 422 (unprocessable"),
        (404, "", "answered 404 (Not Found)"),
    ],
)
def test_final_rejections_quote_the_answer(engine, target, status, body, words):
    engine.queue_replies(Reply(status, body))
    result = post(target)
    assert result.outcome is Outcome.REJECTED
    assert result.status == status
    assert words in result.message
    if body:
        assert body in result.message


@pytest.mark.parametrize("status", [429, 500, 502, 503, 504])
def test_retryable_statuses(engine, target, status):
    engine.queue_replies(Reply(status, headers={"Retry-After": "7"}))
    result = post(target)
    assert result.outcome is Outcome.RETRY
    assert result.retry_after == "7"


def test_site_verification_not_completed_is_retryable(engine, target):
    engine.queue_replies(Reply(403, '{"code":"SiteVerificationNotCompleted","message":"..."}'))
    result = post(target)
    assert result.outcome is Outcome.RETRY
    assert "SiteVerificationNotCompleted" in result.message


def test_html_or_garbage_body_is_quoted_truncated(engine, target):
    engine.queue_replies(
        Reply(400, "<html><body>" + "x" * 1000 + "</body></html>", content_type="text/html")
    )
    result = post(target)
    assert result.outcome is Outcome.REJECTED
    assert "<html><body>xxx" in result.message
    assert result.message.endswith("…")
    assert len(result.message) < 400


def test_binary_garbage_body_does_not_raise(engine, target):
    engine.queue_replies(
        Reply(500, b"\xff\xfe\x00\x01garbage", content_type="application/octet-stream")
    )
    result = post(target)
    assert result.outcome is Outcome.RETRY and result.status == 500
    assert "garbage" in result.message


def test_hanging_engine_returns_near_the_timeout(engine, target):
    # An engine that answers in an hour: the POST returns only if it gives up first.
    engine.queue_replies(Reply(200, delay=3600))
    started = time.monotonic()
    result = post(target, timeout=0.5)
    elapsed = time.monotonic() - started
    assert result.outcome is Outcome.RETRY and result.status is None
    assert "timeout" in result.message
    assert elapsed > 0.4


def test_connection_refused_is_retryable_and_names_the_error():
    target = Engine("closed", f"http://127.0.0.1:{free_port()}/indexnow")
    result = post(target)
    assert result.outcome is Outcome.RETRY and result.status is None
    assert result.error == "ConnectionError"
    assert result.message.startswith("closed: network error (ConnectionError): ")


def test_credentials_of_an_endpoint_stay_out_of_names_and_messages():
    engine = resolve_engine(f"http://bot:s3cret@127.0.0.1:{free_port()}/indexnow?token=t0ken")
    assert engine.name.startswith("127.0.0.1:")
    result = post(engine)
    assert result.error == "ConnectionError"
    assert "/indexnow?token=***" in result.message
    assert "s3cret" not in result.message and "t0ken" not in result.message


def test_hanging_engine_names_the_timeout_class(engine, target):
    engine.queue_replies(Reply(200, delay=3))
    result = post(target, timeout=0.5)
    # The read timeout and the deadline of the POST are both 0.5 s: either ends it.
    assert result.error in {"ReadTimeout", "DeadlineExceeded"}
    assert result.message == f"loopback: no answer within 0.5s (timeout, {result.error})"


def test_huge_answer_is_read_only_up_to_a_short_prefix(engine, target):
    """A 320 MB body: the client reads a few KiB of it, quotes 300 characters, and is done."""
    chunk = b"x" * (1 << 20)
    engine.queue_replies(Reply(403, chunk, repeat=320))
    tracemalloc.start()
    try:
        result = post(target)
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert result.outcome is Outcome.REJECTED and result.status == 403
    assert result.message.endswith("x" * 300 + "…")
    # The body is 320 MB and one chunk of it 1 MiB (allocated by the engine's
    # thread before the POST): anything near reading the body whole is far above.
    assert peak < 4 * (1 << 20), peak


def test_read_stops_at_the_prefix_even_without_a_length(engine, target):
    engine.queue_replies(Reply(200, b"y" * 100_000))
    result = post(target)
    assert result.accepted
    assert "y" * 300 + "…" in result.message


@pytest.mark.slow
def test_trickled_answer_is_a_timeout_at_the_deadline(engine, target):
    """One byte every 2 s never trips the 3 s read timeout; the deadline of the POST does."""
    # A body that would take days: the POST returns only if it is cut before the end.
    engine.queue_replies(Reply(200, "z" * 50, trickle=2, repeat=10_000))
    started = time.monotonic()
    result = post(target, timeout=3)
    elapsed = time.monotonic() - started
    assert result.outcome is Outcome.RETRY and result.status is None
    assert result.error == "DeadlineExceeded"
    assert "no answer within 3s (timeout, DeadlineExceeded)" in result.message
    assert elapsed >= 3


@pytest.fixture
def trickling_status_line():
    """An engine that reads the request, then sends its status line one byte every 0.5 s:
    no single read ever waits long, the answer never completes."""
    server = socket.create_server(("127.0.0.1", 0))
    stop, sent = threading.Event(), threading.Event()

    def serve() -> None:
        conn, _ = server.accept()
        with conn:
            conn.recv(65536)
            for byte in b"HTTP/1.1 200 OK\r\nContent-Length: 0\r\n\r\n":
                if stop.wait(0.5):
                    return
                try:
                    conn.sendall(bytes([byte]))
                except OSError:
                    return
            sent.set()

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    engine = Engine("trickle", f"http://127.0.0.1:{server.getsockname()[1]}/indexnow")
    yield engine, sent
    stop.set()
    thread.join(5)
    server.close()


@pytest.mark.slow
def test_trickled_status_line_is_a_timeout_at_the_deadline(trickling_status_line):
    engine, sent = trickling_status_line
    started = time.monotonic()
    result = post(engine, timeout=2)
    elapsed = time.monotonic() - started
    assert result.outcome is Outcome.RETRY and result.status is None
    assert result.error == "DeadlineExceeded"
    assert elapsed >= 2
    assert not sent.is_set()  # given up before the answer was whole


def test_latin1_digit_in_retry_after_is_as_if_absent(engine, target):
    engine.queue_replies(Reply(429, headers={"Retry-After": "²"}))
    result = post(target)
    assert result.outcome is Outcome.RETRY
    assert result.retry_after == "²"
    assert POLICY.delay(result.status, 1, result.retry_after) == 60


def test_dry_run_logs_engine_host_and_every_url(caplog):
    client = IndexNowClient(dry_run=True)
    target = Engine("bing", "https://www.bing.com/indexnow")
    urls = [f"https://www.example.com/{n}/" for n in range(3)]
    with caplog.at_level(logging.INFO, logger="indexnow_django"):
        result = client.post(target, "www.example.com", "test-key-0123456789", urls)
    assert result.dry_run and result.accepted and result.status is None
    assert caplog.messages == [
        "IndexNow dry run: would POST engine=bing host=www.example.com count=3 urls="
        + " ".join(urls)
    ]


def test_dry_run_of_a_long_batch_lists_urls_at_debug(caplog):
    client = IndexNowClient(dry_run=True)
    target = Engine("bing", "https://www.bing.com/indexnow")
    urls = [f"https://www.example.com/{n}/" for n in range(21)]
    with caplog.at_level(logging.DEBUG, logger="indexnow_django"):
        client.post(target, "www.example.com", "test-key-0123456789", urls)
    assert [(r.levelname, r.getMessage()) for r in caplog.records] == [
        (
            "INFO",
            "IndexNow dry run: would POST engine=bing host=www.example.com count=21 "
            "(URLs listed at DEBUG)",
        ),
        (
            "DEBUG",
            "IndexNow dry run: URLs engine=bing host=www.example.com count=21 urls="
            + " ".join(urls),
        ),
    ]


def test_empty_list_posts_an_empty_list(engine, target):
    assert post(target, urls=[]).accepted
    assert engine.posts[0].json["urlList"] == []


def test_more_than_10000_urls_is_a_programming_error(target):
    with pytest.raises(ValueError, match="at most 10000"):
        post(target, urls=["https://www.example.com/"] * 10_001)


def test_dry_run_sends_nothing(engine, target, caplog):
    client = IndexNowClient(dry_run=True)
    result = client.post(target, "www.example.com", "test-key-0123456789", URLS)
    assert result.accepted and result.status is None
    assert engine.posts == []
    assert "dry run" in caplog.text


def test_engine_names_resolve_to_endpoints():
    assert resolve_engine("bing") == Engine("bing", "https://www.bing.com/indexnow")
    assert resolve_engine("Yandex").endpoint == ENGINE_ENDPOINTS["yandex"]
    assert set(ENGINE_ENDPOINTS) == {"indexnow", "bing", "yandex", "naver", "seznam", "yep"}
    custom = resolve_engine("https://search.example.org/indexnow")
    assert custom == Engine("search.example.org/indexnow", "https://search.example.org/indexnow")
    assert resolve_engine("https://search.example.org/").name == "search.example.org"
    with pytest.raises(ValueError, match="neither a known engine"):
        resolve_engine("google")


POLICY = RetryPolicy(
    max_attempts=5, base_delay=60, multiplier=2.0, max_delay=3600, server_error_delay=5
)


@pytest.mark.parametrize(
    ("status", "attempt", "expected"),
    [
        (429, 1, 60),
        (429, 2, 120),
        (429, 3, 240),
        (503, 1, 5),
        (503, 3, 20),
        (None, 2, 10),  # timeout or network error
        (429, 10, 3600),  # capped
    ],
)
def test_backoff_formula(status, attempt, expected):
    assert POLICY.delay(status, attempt) == expected


def test_retry_after_seconds_wins_and_is_capped():
    assert POLICY.delay(429, 1, "2") == 2
    assert POLICY.delay(503, 3, "30") == 30
    assert POLICY.delay(429, 1, "99999") == 3600
    assert POLICY.delay(429, 1, "9" * 400) == 3600


def test_retry_after_http_date():
    now = datetime(2026, 11, 30, 12, 0, 0, tzinfo=timezone.utc)
    header = format_datetime(now + timedelta(seconds=90), usegmt=True)
    assert POLICY.delay(429, 1, header, now=now.timestamp()) == 90
    past = format_datetime(now - timedelta(seconds=90), usegmt=True)
    assert POLICY.delay(429, 1, past, now=now.timestamp()) == 0


@pytest.mark.parametrize(
    "header", ["", "soon", "-5", "1.5e3", "²", "١٢", "Wed, 21 Oct 2015 07:28:00"]
)
def test_unusable_retry_after_falls_back_to_formula(header):
    assert parse_retry_after(header) is None
    assert POLICY.delay(429, 1, header) == 60


def _result(engine, urls, status=503, retry_after=None, outcome=Outcome.RETRY):
    return PostResult(engine, "www.example.com", tuple(urls), outcome, status, "", retry_after)


def test_plan_gives_one_retry_per_engine_endpoint():
    first = Engine("127.0.0.1:1", "http://127.0.0.1:1/e1")
    second = Engine("127.0.0.1:1", "http://127.0.0.1:1/e2")  # same host, another engine
    results = [
        _result(first, ["https://www.example.com/a", "https://www.example.com/b"], 503),
        _result(second, ["https://www.example.com/a"], 429, retry_after="30"),
        _result(first, ["https://www.example.com/b", "https://www.example.com/c"], 429),
        _result(second, ["https://www.example.com/z"], 400, outcome=Outcome.REJECTED),
    ]
    plan = POLICY.plan(results, attempt=1)
    assert [(r.engine, r.urls, r.delay, r.attempt) for r in plan] == [
        (
            first,
            ("https://www.example.com/a", "https://www.example.com/b", "https://www.example.com/c"),
            60,  # the longest delay its answers ask for: 429 after the first attempt
            2,
        ),
        (second, ("https://www.example.com/a",), 30, 2),
    ]
    assert plan[0].results == (results[0], results[2])


def test_plan_is_empty_at_the_last_attempt():
    engine = Engine("e", "http://127.0.0.1:1/e")
    assert POLICY.plan([_result(engine, ["https://www.example.com/a"])], attempt=5) == []
    assert POLICY.plan([_result(engine, ["https://www.example.com/a"])], attempt=4) != []


@pytest.mark.django_db
def test_two_endpoints_on_one_host_are_two_names_in_signals_logs_and_history(
    engine, indexnow_settings, history_on, caplog
):
    from django.core.management import call_command

    from indexnow_django.models import Delivery
    from indexnow_django.signals import post_sent

    base = f"http://127.0.0.1:{engine.port}"
    indexnow_settings(ENGINES=[f"{base}/e1", f"http://bot:s3cret@127.0.0.1:{engine.port}/e2?t=x"])
    sent: list[str] = []

    def receiver(sender, engine, **kwargs):
        sent.append(engine)

    post_sent.connect(receiver, dispatch_uid="tests.test_client.names")
    try:
        with caplog.at_level("INFO", logger="indexnow_django"):
            call_command("indexnow_submit", "/a/", "--sync", stdout=StringIO())
    finally:
        post_sent.disconnect(dispatch_uid="tests.test_client.names")

    first, second = f"127.0.0.1:{engine.port}/e1", f"127.0.0.1:{engine.port}/e2?t=***"
    assert sorted(post.path for post in engine.posts) == ["/e1", "/e2?t=x"]
    assert sorted(sent) == [first, second]
    assert sorted(Delivery.objects.values_list("engine", flat=True)) == [first, second]
    logged = [r.getMessage() for r in caplog.records if r.getMessage().startswith("IndexNow POST")]
    assert sorted(re.search(r"engine=(\S+)", line).group(1) for line in logged) == [first, second]
    assert "s3cret" not in caplog.text and "t=x" not in caplog.text
