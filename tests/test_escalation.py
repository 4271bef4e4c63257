"""Five failed POSTs in a row for one host and engine make one CRITICAL line; an accepted
POST resets the count and, after the line, logs the recovery."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from indexnow_django.protocol.client import endpoint_name
from indexnow_django.testing import LoopbackEngine, Reply
from indexnow_django.units.dispatch import dispatch
from tests.needs import AT_ONCE, ONE_JOB
from tests.rqhelpers import FAST_RETRY, failed_ids, wait_for_count

# The flushes here are sent at once, in process, unless a test says otherwise.
pytestmark = pytest.mark.indexnow(**AT_ONCE)

FORBIDDEN = Reply(403, body="Key not valid")
BUSY = Reply(429, body="Too Many Requests")


def line_for(engine: LoopbackEngine, host: str = "www.example.com") -> str:
    return f"IndexNow host={host} engine={endpoint_name(engine.url)} failed 5 times in a row"


LINE = "IndexNow host=www.example.com engine="
KEY_FILE = "https://www.example.com/test….txt"


def critical_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.CRITICAL]


def recovery_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if "recovered" in r.getMessage()]


@pytest.fixture
def shared_cache(indexnow_settings: Callable[..., Any]) -> dict[str, Any]:
    overrides = {"DEBOUNCE": {"CACHE": "shared", "TTL": 600}}
    indexnow_settings(**overrides)
    return overrides


def test_the_fifth_403_in_a_row_is_one_critical_line_naming_host_engine_and_key_file(
    engine: LoopbackEngine, shared_cache: Any, caplog: pytest.LogCaptureFixture
) -> None:
    engine.queue_replies(*[FORBIDDEN] * 7)

    with caplog.at_level(logging.INFO, logger="indexnow_django"):
        for n in range(7):
            dispatch([f"/p{n}/"])

    assert len(engine.posts) == 7
    [line] = critical_lines(caplog)
    assert line.startswith(line_for(engine) + " (answers: 403, 403, 403, 403, 403)")
    assert KEY_FILE in line
    assert "test-key-0123456789" not in caplog.text


def test_five_429s_in_a_row_are_one_critical_line_and_an_accepted_post_logs_the_recovery(
    engine: LoopbackEngine, shared_cache: Any, caplog: pytest.LogCaptureFixture
) -> None:
    engine.queue_replies(*[BUSY] * 4, Reply(503), BUSY, Reply(200), Reply(200))

    with caplog.at_level(logging.INFO, logger="indexnow_django"):
        for n in range(8):
            dispatch([f"/p{n}/"])

    [line] = critical_lines(caplog)
    assert line.startswith(line_for(engine) + " (answers: 429, 429, 429, 429, 503)")
    assert "retried, but none gets through" in line
    [recovered] = recovery_lines(caplog)
    assert recovered == (
        f"IndexNow host=www.example.com engine={endpoint_name(engine.url)} recovered: accepted "
        "after 6 failed POSTs in a row (last answers: 429, 429, 429, 503, 429)."
    )


def test_an_accepted_post_starts_the_count_over_without_a_recovery_line_below_the_count(
    engine: LoopbackEngine, shared_cache: Any, caplog: pytest.LogCaptureFixture
) -> None:
    engine.queue_replies(*[FORBIDDEN] * 4, Reply(200), *[BUSY] * 4)

    with caplog.at_level(logging.INFO, logger="indexnow_django"):
        for n in range(9):
            dispatch([f"/p{n}/"])
        assert critical_lines(caplog) == []
        assert recovery_lines(caplog) == []
        engine.queue_replies(FORBIDDEN)
        dispatch(["/last/"])

    [line] = critical_lines(caplog)
    assert line.startswith(line_for(engine) + " (answers: 429, 429, 429, 429, 403)")


def test_each_host_and_engine_has_its_own_count(
    engine: LoopbackEngine,
    shared_cache: Any,
    indexnow_settings: Callable[..., Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    indexnow_settings(HOSTS=["www.example.com", "blog.example.com"])
    engine.queue_replies(*[BUSY] * 4)

    with caplog.at_level(logging.INFO, logger="indexnow_django"):
        for n in range(4):
            dispatch([f"/p{n}/"])
        # Another host's failure is its own count.
        engine.queue_replies(BUSY)
        dispatch(["https://blog.example.com/x/"])
        assert critical_lines(caplog) == []
        engine.queue_replies(BUSY)
        dispatch(["/fifth/"])

    [line] = critical_lines(caplog)
    assert line.startswith(line_for(engine))


def test_a_site_that_mails_errors_to_its_admins_gets_one_mail(
    engine: LoopbackEngine, shared_cache: Any, settings: Any
) -> None:
    import django
    from django.core import mail
    from django.utils.log import AdminEmailHandler

    if django.VERSION >= (6, 1):  # addresses alone, and a mailer named (as 6.1 asks)
        settings.ADMINS = ["ops@example.com"]
        settings.MAILERS = {"default": {"BACKEND": "django.core.mail.backends.locmem.EmailBackend"}}
    else:
        settings.ADMINS = [("Ops", "ops@example.com")]
    handler = AdminEmailHandler()
    handler.setLevel(logging.ERROR)
    root = logging.getLogger()
    root.addHandler(handler)
    engine.queue_replies(*[BUSY] * 6, Reply(200))
    try:
        for n in range(7):
            dispatch([f"/p{n}/"])
    finally:
        root.removeHandler(handler)

    [message] = mail.outbox
    assert message.to == ["ops@example.com"]
    assert message.subject.startswith("[Django] CRITICAL: " + line_for(engine)[:40])
    assert line_for(engine) in message.body


@pytest.mark.worker
def test_workers_share_the_count_and_one_of_them_writes_the_line(
    engine: LoopbackEngine,
    shared_cache: dict[str, Any],
    indexnow_settings: Callable[..., Any],
    start_worker: Callable[..., Any],
    redis_conn: Any,
) -> None:
    overrides = {
        **shared_cache,
        **ONE_JOB,  # a job, and a POST, per flush
        "RETRY": dict(FAST_RETRY),
    }
    indexnow_settings(**overrides)
    engine.queue_replies(*[FORBIDDEN] * 6)
    for n in range(6):
        dispatch([f"/p{n}/"])
    workers = [start_worker(overrides), start_worker(overrides), start_worker(overrides)]

    wait_for_count(lambda: len(failed_ids(redis_conn)), 6, timeout=30)

    outputs = [worker.output() for worker in workers]
    assert sum(output.count(line_for(engine)) for output in outputs) == 1
    assert sum(output.count("IndexNow rejected batch=") for output in outputs) == 6
    assert len({post.json["urlList"][0] for post in engine.posts}) == 6
