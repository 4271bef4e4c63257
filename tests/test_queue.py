"""rq plumbing (``queue.py``): the Redis client, one timeout rule for every job, failed-job
retention, and due times that never come early."""

from __future__ import annotations

import datetime
import time

import pytest
from django.test import override_settings
from rq.registry import ScheduledJobRegistry

from indexnow_django.testing import Reply
from indexnow_django.transports.rq import queue as rq_plumbing
from indexnow_django.units.dispatch import dispatch
from indexnow_django.units.scheduling import Publication, schedule_now
from tests.needs import ONE_JOB
from tests.rqhelpers import exc_string, failed_ids, fetch, only_queued_job, wait_for_status


def test_a_shorter_timeout_gives_up_sooner_and_clients_are_shared(silent_redis):
    import redis

    with override_settings(RQ_QUEUES={"q": {"URL": f"redis://127.0.0.1:{silent_redis}/0"}}):
        quick = rq_plumbing.connection("q", timeout=0.3)
        assert rq_plumbing.connection("q", timeout=0.3) is quick
        assert rq_plumbing.connection("q") is not quick
        # The shorter timeout is the one its sockets get (a silent Redis: a ping times out).
        assert quick.connection_pool.connection_kwargs["socket_timeout"] == 0.3
        with pytest.raises(redis.TimeoutError):
            quick.ping()


@pytest.mark.parametrize(("variable", "lasts"), [(None, 15), ("2", 2)])
def test_a_heartbeat_lasts_what_the_environment_says(
    indexnow_settings, redis_conn, monkeypatch, variable, lasts
):
    """``INDEXNOW_HEARTBEAT_TTL`` (the test suite's) shortens a delivery job's heartbeat."""
    if variable is None:
        monkeypatch.delenv("INDEXNOW_HEARTBEAT_TTL", raising=False)
    else:
        monkeypatch.setenv("INDEXNOW_HEARTBEAT_TTL", variable)
    indexnow_settings(DISPATCH="queue", QUEUE={"COALESCE": 0})
    dispatch(["/a/"])
    job = only_queued_job(redis_conn)
    with rq_plumbing.heartbeat(job):
        assert 0 < redis_conn.ttl(f"indexnow:heartbeat:{job.id}") <= lasts
        assert redis_conn.ttl(f"indexnow:heartbeat:{job.id}") > lasts - 2


def test_every_job_gets_the_timeout_rounded_up_and_the_failure_ttl(indexnow_settings, redis_conn):
    indexnow_settings(DISPATCH="queue", QUEUE={"COALESCE": 0, "TIMEOUT": 1.5, "FAILURE_TTL": 3600})
    dispatch(["/a/"])
    delivery = only_queued_job(redis_conn)
    publication = schedule_now(Publication("testapp.post", 1, int(time.time()) + 3600))
    assert publication is not None
    publication = fetch(redis_conn, publication)
    assert delivery.timeout == publication.timeout == 2
    assert delivery.failure_ttl == publication.failure_ttl == 3600


@pytest.mark.worker
def test_a_finished_delivery_job_leaves_nothing_in_redis(
    indexnow_settings, start_worker, engine, redis_conn
):
    overrides = {"DISPATCH": "queue", "QUEUE": {}}  # RESULT_TTL: its default, 0
    indexnow_settings(**overrides)
    start_worker(overrides)
    dispatch(["/kept-nowhere/"])
    [post] = engine.wait_for_posts(1)
    assert post.urls == ["https://www.example.com/kept-nowhere/"]
    deadline = time.monotonic() + 20
    while redis_conn.keys("rq:job:*") and time.monotonic() < deadline:
        time.sleep(0.05)
    assert redis_conn.keys("rq:job:*") == []
    assert redis_conn.keys("rq:results:*") == []
    assert redis_conn.zcard("rq:finished:default") == 0


def test_a_due_time_is_never_early():
    assert rq_plumbing.due_at(100.0) == datetime.datetime(
        1970, 1, 1, 0, 1, 40, tzinfo=datetime.timezone.utc
    )
    assert rq_plumbing.due_at(100.2).timestamp() == 101


def test_a_delayed_flush_is_scheduled_no_earlier_than_the_delay(indexnow_settings, redis_conn):
    indexnow_settings(DISPATCH="queue", QUEUE={"COALESCE": 0, "DELAY": 2.5})
    before = time.time()
    dispatch(["/a/"])
    registry = ScheduledJobRegistry("default", connection=redis_conn)
    [job_id] = registry.get_job_ids()
    due = registry.get_scheduled_time(job_id).replace(tzinfo=datetime.timezone.utc).timestamp()
    assert before + 2.5 <= due <= time.time() + 3.5


@pytest.fixture
def rejected_job(engine, indexnow_settings, redis_conn, start_worker) -> str:
    """The id of a delivery job that a worker ran and that failed on a 403."""
    overrides = ONE_JOB  # the flush's own job
    indexnow_settings(**overrides)
    start_worker(overrides, with_scheduler=False)
    engine.queue_replies(Reply(403))
    dispatch(["/a/"])
    return wait_for_failed_job(redis_conn)


@pytest.mark.worker
def test_a_failed_delivery_job_is_kept_for_failure_ttl_only(rejected_job, redis_conn):
    """rq would keep it a year: the job, its traceback and its URLs, per failed flush."""
    job = fetch(redis_conn, rejected_job)
    assert "SubmissionRejected" in exc_string(job)
    ttl = redis_conn.ttl(job.key)
    assert 7 * 24 * 3600 - 60 <= ttl <= 7 * 24 * 3600


def wait_for_failed_job(conn, timeout: float = 20.0) -> str:
    deadline = time.monotonic() + timeout
    while not failed_ids(conn):
        assert time.monotonic() < deadline, "no failed job"
        time.sleep(0.05)
    [job_id] = failed_ids(conn)
    wait_for_status(conn, [job_id], ["failed"])
    return job_id


@pytest.mark.worker
def test_the_documented_requeue_runs_this_apps_failed_jobs_only(rejected_job, engine, redis_conn):
    import django_rq

    from tests.testapp.jobs import save_pages_then_fail

    ours = rejected_job
    theirs = django_rq.get_queue("default").enqueue(save_pages_then_fail, [])
    wait_for_status(redis_conn, [theirs.id], ["failed"])

    exec(documented_requeue_snippet(), {})

    wait_for_status(redis_conn, [ours], ["finished"])
    assert [post.reply.status for post in engine.wait_for_posts(2)] == [403, 200]
    assert failed_ids(redis_conn) == [theirs.id]


def documented_requeue_snippet() -> str:
    """The Python block of the "Failed jobs" section of docs/delivery.md."""
    from pathlib import Path

    page = (Path(__file__).resolve().parent.parent / "docs" / "delivery.md").read_text()
    section = page.split("## Failed jobs", 1)[1].split("\n## ", 1)[0]
    return section.split("```python\n", 1)[1].split("```", 1)[0]
