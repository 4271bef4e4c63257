"""Per host and engine, from the history: the last accepted POST, the last answer, the run of
failed POSTs; what ``indexnow_check`` says of them and what the admin's list shows."""

from __future__ import annotations

import json
import re
from collections.abc import Callable
from io import StringIO
from typing import Any

import pytest
from django.core.management import CommandError, call_command
from django.db import connection
from django.test import Client
from django.test.utils import CaptureQueriesContext

from indexnow_django.conf import get_settings
from indexnow_django.ops import health
from indexnow_django.protocol.client import endpoint_name
from indexnow_django.testing import LoopbackEngine, Reply
from indexnow_django.units.dispatch import dispatch
from tests.conftest import make_delivery
from tests.needs import AT_ONCE, ONE_JOB
from tests.test_admin import LIST, staff

# The flushes here are sent at once, in process: each is recorded when it returns.
pytestmark = [pytest.mark.django_db, pytest.mark.indexnow(**AT_ONCE)]

HOST = "www.example.com"


def run_check(*args: str) -> tuple[str, CommandError | None]:
    out = StringIO()
    try:
        call_command("indexnow_check", "--offline", *args, stdout=out, no_color=True)
    except CommandError as exc:
        return out.getvalue(), exc
    return out.getvalue(), None


def health_lines(output: str) -> list[str]:
    """The lines of the check's health section."""
    lines = output.splitlines()
    start = next(i for i, line in enumerate(lines) if line.startswith("Deliveries per host"))
    found = []
    for line in lines[start + 1 :]:
        if not line.startswith("  "):
            break
        if not line.strip().startswith("hint:"):
            found.append(line.strip())
    return found


def engine_name(engine: LoopbackEngine) -> str:
    return endpoint_name(engine.url)


def answered(engine: LoopbackEngine, *replies: Reply) -> None:
    """One flush per reply, each sent at once and answered by it, in order."""
    engine.queue_replies(*replies)
    for n in range(len(replies)):
        dispatch([f"/p{n}/"])


def test_five_final_rejections_fail_the_check_naming_host_engine_and_answer(
    engine: LoopbackEngine, history_on: Any
) -> None:
    answered(engine, Reply(200), *[Reply(403, body="Key not valid")] * 5)

    output, error = run_check()

    assert error is not None
    [line] = health_lines(output)
    assert line.startswith(
        f"FAIL  {HOST} → {engine_name(engine)}: 5 final rejections in a row since "
    )
    assert "last answer 403 (forbidden: the key is not valid" in line
    assert "last accepted 20" in line
    assert "check the key file" in output


def test_five_retryable_failures_are_a_warning_and_an_accepted_post_clears_it(
    engine: LoopbackEngine, history_on: Any
) -> None:
    answered(engine, *[Reply(429, body="Too Many Requests")] * 4, Reply(503))

    output, error = run_check()
    assert error is None
    [line] = health_lines(output)
    assert line.startswith(f"WARN  {HOST} → {engine_name(engine)}: 5 failed POSTs in a row since")
    assert "last answer 503" in line and "never accepted" in line

    engine.queue_replies(Reply(202))
    dispatch(["/again/"])
    output, error = run_check()
    [line] = health_lines(output)
    assert error is None
    assert line.startswith(f"OK    {HOST} → {engine_name(engine)}: last accepted 20")
    assert line.endswith("last answer 202 (Accepted)")


def test_a_run_ending_in_rejections_fails_whatever_retryable_answers_it_holds(
    client: Client, engine: LoopbackEngine, history_on: Any
) -> None:
    rejected = Reply(403, body="Key not valid")
    answered(engine, rejected, Reply(429, body="Too Many Requests"), *[rejected] * 3)

    output, error = run_check()

    assert error is not None
    assert f"{HOST} → {engine_name(engine)}" in str(error)
    [line] = health_lines(output)
    assert line.startswith(f"FAIL  {HOST} → {engine_name(engine)}: 5 failed POSTs in a row since ")
    assert "last answer 403 (forbidden: the key is not valid" in line
    hints = [row.strip() for row in output.splitlines() if row.strip().startswith("hint:")]
    [hint] = [row for row in hints if "key file" in row or "429" in row]
    assert "check the key file" in hint and "429" not in hint

    # The admin's list says the same: an error, not a warning.
    staff(client, "indexnow.view_delivery")
    html = client.get(LIST).content.decode()
    [item] = re.findall(r'<div id="indexnow-trouble".*?<li class="(\w+)"', html, re.S)
    assert item == "error"


def test_a_run_that_ends_in_a_retryable_answer_is_a_warning(
    engine: LoopbackEngine, history_on: Any
) -> None:
    answered(engine, *[Reply(403, body="Key not valid")] * 2, *[Reply(503)] * 3)

    output, error = run_check()

    assert error is None
    [line] = health_lines(output)
    assert line.startswith(f"WARN  {HOST} → {engine_name(engine)}: 5 failed POSTs in a row")


def test_a_first_failure_says_nothing_was_accepted_yet_and_since_when(
    engine: LoopbackEngine, history_on: Any
) -> None:
    engine.queue_replies(Reply(403, body="Key not valid"))
    dispatch(["/p/"])

    output, error = run_check()

    assert error is None
    [line] = health_lines(output)
    assert line.startswith(f"WARN  {HOST} → {engine_name(engine)}: 1 final rejections in a row")
    [hint] = [row.strip() for row in output.splitlines() if "No POST" in row or "a day" in row]
    assert "for a day" not in hint
    assert re.search(
        r"hint: No POST has been accepted yet: the first failed at 20\S+ \S+ UTC \(\d+s ago\)", hint
    ), hint


def test_four_failures_are_no_warning_but_a_day_without_an_accepted_post_is(
    engine: LoopbackEngine, history_on: Any
) -> None:
    name = engine_name(engine)
    make_delivery(age_days=2, engine=name, outcome="accepted", status=200)
    make_delivery(age_days=0.1, engine=name, outcome="retry", status=429, answer="slow down")

    [found] = health.host_engine_health(get_settings())
    assert (found.failures, found.final_failures, found.level) == (1, 0, health.WARN)
    output, error = run_check()
    assert error is None
    [line] = health_lines(output)
    assert line.startswith(f"WARN  {HOST} → {name}: 1 failed POSTs in a row since")
    assert "last answer 429 slow down; last accepted" in line
    assert "(2d ago)" in line

    make_delivery(age_days=0.05, engine=name, outcome="accepted", status=200)
    make_delivery(age_days=0.01, engine=name, outcome="retry", status=429)
    [found] = health.host_engine_health(get_settings())
    assert (found.failures, found.level) == (1, health.OK)


def test_dry_runs_and_skipped_urls_are_no_posts(engine: LoopbackEngine, history_on: Any) -> None:
    name = engine_name(engine)
    make_delivery(engine=name, outcome="accepted", status=200, age_days=0.5)
    make_delivery(engine=name, outcome="dry_run", status=None, age_days=0.2)
    make_delivery(engine="preflight", outcome="skipped", status=None, answer="noindex")

    [found] = health.host_engine_health(get_settings())
    assert (found.last_outcome, found.last_status, found.failures) == ("accepted", 200, 0)


def test_a_host_and_engine_without_posts_say_so(engine: LoopbackEngine, history_on: Any) -> None:
    output, error = run_check("--json")

    assert error is None
    report = json.loads(output)
    [section] = [s for s in report["sections"] if s["id"] == "health"]
    [finding] = section["findings"]
    assert finding["status"] == "OK"
    assert finding["message"] == f"{HOST} → {engine_name(engine)}: no POST recorded"
    assert finding["data"]["failures"] == 0


@pytest.mark.indexnow(HISTORY={"ENABLED": False})
def test_without_the_history_the_check_says_it_cannot_tell(engine: LoopbackEngine) -> None:
    output, error = run_check()

    assert error is None
    assert health_lines(output) == [
        "OK    INDEXNOW['HISTORY']['ENABLED'] is False: POSTs are not recorded, so nothing "
        "tells whether they are accepted",
    ]


def test_a_bounded_number_of_queries_per_host_and_engine_whatever_the_history(
    engine: LoopbackEngine, history_on: Any, indexnow_settings: Callable[..., Any]
) -> None:
    indexnow_settings(HOSTS=[HOST, "blog.example.com"])
    name = engine_name(engine)
    for n in range(30):
        make_delivery(engine=name, outcome="retry" if n % 3 else "accepted", status=429)

    with CaptureQueriesContext(connection) as queries:
        found = health.host_engine_health(get_settings())

    assert [(h.host, h.engine) for h in found] == [(HOST, name), ("blog.example.com", name)]
    # For each host, when each outcome was last recorded (3 queries); for the one with
    # records, its newest record and, as that one failed, the run per kind of failure (3).
    assert len(queries) == 3 + 6


def test_the_admin_list_shows_the_trouble_above_the_list_while_it_lasts(
    client: Client, engine: LoopbackEngine, history_on: Any
) -> None:
    staff(client, "indexnow.view_delivery")
    engine.queue_replies(*[Reply(429, body="Too Many Requests")] * 5)
    for n in range(5):
        dispatch([f"/p{n}/"])

    html = client.get(LIST).content.decode()
    [notice] = re.findall(r'<div id="indexnow-trouble".*?</div>', html, re.S)
    text = " ".join(re.sub(r"<[^>]+>", " ", notice).split())
    assert f"{HOST} → {engine_name(engine)} : 5 failed POSTs in a row since" in text
    assert "last answer: 429 (too many requests): Too Many Requests; never accepted" in text

    engine.queue_replies(Reply(200))
    dispatch(["/ok/"])
    html = client.get(LIST).content.decode()
    assert "indexnow-trouble" not in html


# --------------------------------------------------------------------------- a real worker


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_retrying_429s_makes_one_critical_line_a_warning_and_then_recovers(
    engine: LoopbackEngine,
    history_on: dict[str, Any],
    indexnow_settings: Callable[..., Any],
    start_worker: Callable[..., Any],
    redis_conn: Any,
) -> None:
    from tests.rqhelpers import FAST_RETRY, failed_ids, wait_for_count

    overrides = {
        **history_on,
        "DISPATCH": "queue",
        "DEBOUNCE": {"CACHE": "shared", "TTL": 600},
        "RETRY": {**FAST_RETRY, "MAX_ATTEMPTS": 5},
    }
    indexnow_settings(**overrides)
    busy = Reply(429, body="Too Many Requests")
    engine.queue_replies(*[busy] * 5)
    name = engine_name(engine)
    line = f"IndexNow host={HOST} engine={name} failed 5 times in a row (answers: 429, 429, 429"

    # One flush, retried by the worker through rq's scheduler until it gives up.
    dispatch(["/a/"])
    worker = start_worker(overrides)
    wait_for_count(lambda: len(failed_ids(redis_conn)), 1, timeout=60)

    assert [post.reply.status for post in engine.posts] == [429] * 5
    assert worker.output().count(line) == 1
    output, error = run_check()
    assert error is None
    [found] = health_lines(output)
    assert found.startswith(f"WARN  {HOST} → {name}: 5 failed POSTs in a row since ")
    assert "last answer 429 (too many requests): Too Many Requests; never accepted" in found

    # The next accepted POST clears the warning and logs the recovery.
    dispatch(["/b/"])
    worker.wait_for_output(f"IndexNow host={HOST} engine={name} recovered: accepted after 5")
    output, error = run_check()
    [found] = health_lines(output)
    assert found.startswith(f"OK    {HOST} → {name}: last accepted ")
    assert worker.output().count(line) == 1


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_worker_with_five_403s_fails_the_check(
    engine: LoopbackEngine,
    history_on: dict[str, Any],
    indexnow_settings: Callable[..., Any],
    start_worker: Callable[..., Any],
    redis_conn: Any,
) -> None:
    from tests.rqhelpers import failed_ids, wait_for_count

    overrides = {
        **history_on,
        **ONE_JOB,  # a job, and a POST, per flush
        "DEBOUNCE": {"CACHE": "shared", "TTL": 600},
    }
    indexnow_settings(**overrides)
    engine.queue_replies(*[Reply(403, body="Key not valid")] * 5)
    for n in range(5):
        dispatch([f"/p{n}/"])
    worker = start_worker(overrides)
    wait_for_count(lambda: len(failed_ids(redis_conn)), 5, timeout=60)

    output, error = run_check()

    assert error is not None
    [found] = health_lines(output)
    assert found.startswith(f"FAIL  {HOST} → {engine_name(engine)}: 5 final rejections in a row")
    assert "403 (forbidden" in found
    assert worker.output().count(f"engine={engine_name(engine)} failed 5 times in a row") == 1
