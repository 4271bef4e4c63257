"""``indexnow_django.signals.post_sent``: once per POST the loopback engine received,
dry runs included, and once more when URLs are given up."""

from __future__ import annotations

import logging
import re
import time
from collections.abc import Callable, Iterator
from io import StringIO
from typing import Any

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError

from indexnow_django.exceptions import RetriesExhausted
from indexnow_django.jobs import deliver
from indexnow_django.signals import post_sent
from indexnow_django.testing import LoopbackEngine, Reply
from indexnow_django.units.dispatch import dispatch
from tests.needs import AT_ONCE

A = "https://www.example.com/a/"
B = "https://www.example.com/b/"


@pytest.fixture
def sent() -> Iterator[list[dict[str, Any]]]:
    """The keyword arguments of every ``post_sent`` while the test runs."""
    seen: list[dict[str, Any]] = []

    def receiver(sender: Any, **kwargs: Any) -> None:
        kwargs.pop("signal")
        seen.append({"sender": sender, **kwargs})

    post_sent.connect(receiver, dispatch_uid="tests.test_signals")
    yield seen
    post_sent.disconnect(dispatch_uid="tests.test_signals")


def submit(*args: str) -> str:
    out = StringIO()
    call_command("indexnow_submit", *args, stdout=out, stderr=StringIO(), no_color=True)
    return out.getvalue()


def test_one_signal_per_post_with_what_the_engine_answered(
    engine: LoopbackEngine, sent: list[dict[str, Any]], indexnow_settings: Callable[..., Any]
) -> None:
    indexnow_settings(HOSTS=["www.example.com", "blog.example.com"])

    started = time.monotonic()
    submit(A, B, "https://blog.example.com/c/", "--sync")
    took = time.monotonic() - started

    assert len(engine.posts) == 2
    assert [(s["host"], s["count"], s["outcome"], s["status"], s["attempt"]) for s in sent] == [
        ("www.example.com", 2, "accepted", 200, 1),
        ("blog.example.com", 1, "accepted", 200, 1),
    ]
    first = sent[0]
    assert first["sender"] is None
    assert first["engine"] == f"127.0.0.1:{engine.port}/indexnow"
    assert isinstance(first["duration"], float) and 0 < first["duration"] <= took
    assert re.fullmatch(r"[0-9a-f]{16}", first["batch_id"])


@pytest.mark.indexnow(**AT_ONCE)
def test_a_dry_run_sends_one_per_post_it_would_have_made(
    engine: LoopbackEngine, sent: list[dict[str, Any]], indexnow_settings: Callable[..., Any]
) -> None:
    indexnow_settings(DRY_RUN=True)

    dispatch([A, B])

    assert engine.posts == []
    assert [(s["count"], s["outcome"], s["status"]) for s in sent] == [(2, "dry_run", None)]


def test_each_attempt_of_an_in_process_retry_is_one_signal(
    engine: LoopbackEngine, sent: list[dict[str, Any]], indexnow_settings: Callable[..., Any]
) -> None:
    indexnow_settings(RETRY={"SERVER_ERROR_DELAY": 0})
    engine.queue_replies(Reply(503))

    submit(A, "--sync")

    assert [(s["outcome"], s["status"], s["attempt"]) for s in sent] == [
        ("retry", 503, 1),
        ("accepted", 200, 2),
    ]


def test_urls_given_up_after_the_last_attempt_give_one_failed_signal(
    engine: LoopbackEngine, sent: list[dict[str, Any]], indexnow_settings: Callable[..., Any]
) -> None:
    indexnow_settings(RETRY={"MAX_ATTEMPTS": 2, "SERVER_ERROR_DELAY": 0})
    engine.queue_replies(Reply(503), Reply(503))

    with pytest.raises(CommandError):
        submit(A, B, "--sync")

    assert len(engine.posts) == 2
    assert [(s["count"], s["outcome"], s["status"], s["attempt"]) for s in sent] == [
        (2, "retry", 503, 1),
        (2, "retry", 503, 2),
        (2, "failed", 503, 2),
    ]
    assert sent[2]["duration"] == 0.0


def test_a_rejection_is_one_signal_and_no_failed_one(
    engine: LoopbackEngine, sent: list[dict[str, Any]]
) -> None:
    engine.queue_replies(Reply(422, body="Invalid URLs"))

    with pytest.raises(CommandError):
        submit(A, "--sync")

    assert [(s["outcome"], s["status"]) for s in sent] == [("rejected", 422)]


def test_a_job_that_runs_out_of_attempts_signals_failed(
    engine: LoopbackEngine, sent: list[dict[str, Any]], indexnow_settings: Callable[..., Any]
) -> None:
    indexnow_settings(RETRY={"MAX_ATTEMPTS": 3})
    engine.queue_replies(Reply(500))

    with pytest.raises(RetriesExhausted):
        deliver([A], batch_id="b-1", attempt=3)

    assert [(s["outcome"], s["status"], s["attempt"], s["batch_id"]) for s in sent] == [
        ("retry", 500, 3, "b-1"),
        ("failed", 500, 3, "b-1"),
    ]


@pytest.mark.indexnow(**AT_ONCE)
def test_a_synchronous_send_that_cannot_retry_signals_failed(
    engine: LoopbackEngine, sent: list[dict[str, Any]]
) -> None:
    engine.queue_replies(Reply(503))

    dispatch([A])

    assert [(s["outcome"], s["status"]) for s in sent] == [("retry", 503), ("failed", 503)]


def test_a_receiver_that_raises_is_logged_and_the_delivery_goes_on(
    engine: LoopbackEngine, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(sender: Any, **kwargs: Any) -> None:
        raise RuntimeError("statsd is down")

    post_sent.connect(broken, dispatch_uid="tests.test_signals.broken")
    try:
        with caplog.at_level(logging.WARNING, logger="indexnow_django"):
            stdout = submit(A, B, "--sync")
    finally:
        post_sent.disconnect(dispatch_uid="tests.test_signals.broken")

    assert engine.posted_urls() == [A, B]
    assert stdout.rstrip().endswith("2 accepted, 0 rejected, 0 failed.")
    assert "post_sent receiver" in caplog.text and "RuntimeError: statsd is down" in caplog.text
