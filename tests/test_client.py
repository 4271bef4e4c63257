"""The HTTP client against a real HTTP server on 127.0.0.1."""

import time
from datetime import datetime, timedelta, timezone
from email.utils import format_datetime

import pytest

from indexnow_django import __version__
from indexnow_django.client import (
    ENGINE_ENDPOINTS,
    Engine,
    IndexNowClient,
    Outcome,
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
    engine.queue_replies(Reply(200, delay=5))
    started = time.monotonic()
    result = post(target, timeout=0.5)
    elapsed = time.monotonic() - started
    assert result.outcome is Outcome.RETRY and result.status is None
    assert "timeout" in result.message
    assert 0.4 < elapsed < 2


def test_connection_refused_is_retryable():
    target = Engine("closed", f"http://127.0.0.1:{free_port()}/indexnow")
    result = post(target)
    assert result.outcome is Outcome.RETRY and result.status is None
    assert "network error" in result.message


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
    assert custom == Engine("search.example.org", "https://search.example.org/indexnow")
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


def test_retry_after_http_date():
    now = datetime(2026, 11, 30, 12, 0, 0, tzinfo=timezone.utc)
    header = format_datetime(now + timedelta(seconds=90), usegmt=True)
    assert POLICY.delay(429, 1, header, now=now.timestamp()) == 90
    past = format_datetime(now - timedelta(seconds=90), usegmt=True)
    assert POLICY.delay(429, 1, past, now=now.timestamp()) == 0


@pytest.mark.parametrize("header", ["", "soon", "-5", "1.5e3"])
def test_unusable_retry_after_falls_back_to_formula(header):
    assert parse_retry_after(header) is None
    assert POLICY.delay(429, 1, header) == 60
