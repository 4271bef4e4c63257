"""Five final 403s in a row for one host make one CRITICAL line; an accepted POST resets."""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

import pytest

from indexnow_django.dispatch import dispatch
from indexnow_django.testing import LoopbackEngine, Reply
from tests.rqhelpers import FAST_RETRY, failed_ids, wait_for_count

FORBIDDEN = Reply(403, body="Key not valid")
LINE = "IndexNow host=www.example.com rejected 5 times in a row (403)"
KEY_FILE = "https://www.example.com/test…6789.txt"


def critical_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [r.getMessage() for r in caplog.records if r.levelno == logging.CRITICAL]


@pytest.fixture
def shared_cache(indexnow_settings: Callable[..., Any]) -> dict[str, Any]:
    overrides = {"DEBOUNCE": {"CACHE": "shared", "TTL": 600}}
    indexnow_settings(**overrides)
    return overrides


def test_the_fifth_403_in_a_row_is_one_critical_line_naming_host_and_key_file(
    engine: LoopbackEngine, shared_cache: Any, caplog: pytest.LogCaptureFixture
) -> None:
    engine.queue_replies(*[FORBIDDEN] * 7)

    with caplog.at_level(logging.INFO, logger="indexnow_django"):
        for n in range(7):
            dispatch([f"/p{n}/"])

    assert len(engine.posts) == 7
    [line] = critical_lines(caplog)
    assert line.startswith(LINE)
    assert KEY_FILE in line
    assert "test-key-0123456789" not in caplog.text


def test_an_accepted_post_starts_the_count_over(
    engine: LoopbackEngine, shared_cache: Any, caplog: pytest.LogCaptureFixture
) -> None:
    engine.queue_replies(*[FORBIDDEN] * 4, Reply(200), *[FORBIDDEN] * 4)

    with caplog.at_level(logging.INFO, logger="indexnow_django"):
        for n in range(9):
            dispatch([f"/p{n}/"])
        assert critical_lines(caplog) == []
        engine.queue_replies(FORBIDDEN)
        dispatch(["/last/"])

    [line] = critical_lines(caplog)
    assert line.startswith(LINE)


def test_other_answers_neither_count_nor_reset(
    engine: LoopbackEngine,
    shared_cache: Any,
    indexnow_settings: Callable[..., Any],
    caplog: pytest.LogCaptureFixture,
) -> None:
    indexnow_settings(HOSTS=["www.example.com", "blog.example.com"])
    engine.queue_replies(
        FORBIDDEN,
        FORBIDDEN,
        Reply(503),
        Reply(403, body='{"code":"SiteVerificationNotCompleted"}'),
        Reply(400),
        FORBIDDEN,
        FORBIDDEN,
    )

    with caplog.at_level(logging.INFO, logger="indexnow_django"):
        for n in range(7):
            dispatch([f"/p{n}/"])
        # 4 final 403s so far for www; another host's 403 is its own count.
        engine.queue_replies(FORBIDDEN)
        dispatch(["https://blog.example.com/x/"])
        assert critical_lines(caplog) == []
        engine.queue_replies(FORBIDDEN)
        dispatch(["/fifth/"])

    [line] = critical_lines(caplog)
    assert line.startswith(LINE)


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
        "DISPATCH": "queue",
        "RETRY": dict(FAST_RETRY),
        "QUEUE": {"COALESCE": 0, "RESULT_TTL": 600},  # a job, and a POST, per flush
    }
    indexnow_settings(**overrides)
    engine.queue_replies(*[FORBIDDEN] * 6)
    for n in range(6):
        dispatch([f"/p{n}/"])
    workers = [start_worker(overrides), start_worker(overrides), start_worker(overrides)]

    wait_for_count(lambda: len(failed_ids(redis_conn)), 6, timeout=30)

    outputs = [worker.output() for worker in workers]
    assert sum(output.count(LINE) for output in outputs) == 1
    assert sum(output.count("IndexNow rejected batch=") for output in outputs) == 6
    assert len({post.json["urlList"][0] for post in engine.posts}) == 6
