"""Scheduled publication: one rq job at the publication moment, stale jobs are no-ops.

This process dispatches to the queue (so it can schedule). Jobs are run by
real rq workers: here, in this process, a burst of the package's
``SimpleWorker`` (the job's submission goes through ``dispatch`` onto the
queue and the same burst delivers it to the loopback engine); and for the
timing, a ``rqworker --with-scheduler`` subprocess that fires the job on time.
"""

from __future__ import annotations

import datetime
import logging
import math
import re
import signal
import time
from collections.abc import Iterator
from typing import Any

import django_rq
import pytest
from django.core import checks
from django.db import transaction
from django.utils import timezone
from rq.job import Job, JobStatus
from rq.queue import Queue
from rq.registry import FailedJobRegistry, ScheduledJobRegistry

from indexnow_django.units.scheduling import Publication, check_scheduling, publish
from indexnow_django.worker import SimpleWorker
from tests.testapp.models import Post

pytestmark = pytest.mark.django_db(transaction=True)

BASE = "https://www.example.com"


@pytest.fixture(autouse=True)
def _queue_dispatch(indexnow_settings: Any, redis_conn: Any) -> None:
    # The tests run the delivery jobs themselves: a job per flush, no coalescing window,
    # and each job's POST at once (the throttle would hand a POST over to a later job).
    indexnow_settings(
        DISPATCH="queue",
        DEBOUNCE={"TTL": 0},
        QUEUE={"COALESCE": 0, "RESULT_TTL": 600},
        THROTTLE={"MAX_REQUESTS_PER_MINUTE": None},
    )


@pytest.fixture
def queue() -> Queue:
    q: Queue = django_rq.get_queue("default")
    return q


def in_an_hour() -> datetime.datetime:
    return (timezone.now() + datetime.timedelta(hours=1)).replace(microsecond=0)


def post(slug: str, *, when: datetime.datetime | None, status: str = Post.PUBLISHED) -> Post:
    return Post.objects.create(title=slug, slug=slug, status=status, published_at=when)


def scheduled(queue: Queue) -> dict[str, datetime.datetime]:
    """Job id -> scheduled time (UTC) of every job in the scheduled registry."""
    registry = ScheduledJobRegistry(queue=queue)
    return {job_id: registry.get_scheduled_time(job_id) for job_id in registry.get_job_ids()}


def expected_job_id(obj: Post, when: datetime.datetime) -> str:
    return Publication("testapp.Post", obj.pk, int(when.timestamp())).job_id


@pytest.fixture
def run_jobs_now(queue: Queue) -> Iterator[Any]:
    """Move every scheduled job onto the queue and work it off with a burst worker."""
    handlers = {sig: signal.getsignal(sig) for sig in (signal.SIGINT, signal.SIGTERM)}

    def run() -> list[Job]:
        registry = ScheduledJobRegistry(queue=queue)
        jobs = Job.fetch_many(registry.get_job_ids(), connection=queue.connection)
        for job in jobs:
            assert job is not None
            registry.remove(job)
            queue.enqueue_job(job)
        SimpleWorker([queue], connection=queue.connection).work(burst=True)
        for job in jobs:
            assert job is not None
            job.refresh()
        return [job for job in jobs if job is not None]

    yield run
    for sig, handler in handlers.items():  # the worker installs its own
        signal.signal(sig, handler)


# Scheduling -------------------------------------------------------------------------


def test_a_future_published_post_gets_one_job_at_that_moment(queue: Queue) -> None:
    when = in_an_hour()
    obj = post("future", when=when)
    job_id = expected_job_id(obj, when)
    assert scheduled(queue) == {job_id: when.astimezone(datetime.timezone.utc)}
    assert re.fullmatch(r"[A-Za-z0-9_-]+", job_id)
    job = Job.fetch(job_id, connection=queue.connection)
    assert job.func_name == "indexnow_django.jobs.publish"
    assert job.args == ("testapp.Post", obj.pk, int(when.timestamp()))
    assert job.kwargs == {}
    assert queue.count == 0


def test_a_fractional_publish_time_is_scheduled_at_the_next_whole_second(queue: Queue) -> None:
    when = in_an_hour() + datetime.timedelta(microseconds=250_000)
    obj = post("fraction", when=when)
    rounded = when.replace(microsecond=0) + datetime.timedelta(seconds=1)
    assert scheduled(queue) == {expected_job_id(obj, rounded): rounded}


def test_a_draft_gets_no_job(queue: Queue) -> None:
    post("draft", when=in_an_hour(), status=Post.DRAFT)
    assert scheduled(queue) == {}


def test_an_already_public_post_is_submitted_now_and_not_scheduled(
    queue: Queue, engine: Any, run_jobs_now: Any
) -> None:
    post("now", when=timezone.now() - datetime.timedelta(minutes=1))
    post("no-time", when=None)
    assert scheduled(queue) == {}
    assert queue.count == 2  # one delivery job per flush (each save committed on its own)
    run_jobs_now()
    assert sorted(engine.posted_urls()) == [f"{BASE}/posts/no-time/", f"{BASE}/posts/now/"]


def test_the_same_post_and_time_saved_twice_give_one_job(queue: Queue) -> None:
    when = in_an_hour()
    obj = post("twice", when=when)
    obj.title = "Twice, edited"
    obj.save()
    Post.objects.get(pk=obj.pk).save()
    assert list(scheduled(queue)) == [expected_job_id(obj, when)]


def test_scheduling_waits_for_the_commit(queue: Queue) -> None:
    when = in_an_hour()
    with transaction.atomic():
        obj = post("committed", when=when)
        assert scheduled(queue) == {}
    assert list(scheduled(queue)) == [expected_job_id(obj, when)]
    with pytest.raises(RuntimeError), transaction.atomic():
        post("rolled-back", when=when)
        raise RuntimeError("undo")
    assert list(scheduled(queue)) == [expected_job_id(obj, when)]


# When the job fires ------------------------------------------------------------------


def test_a_reschedule_gives_a_new_job_and_the_old_one_sends_nothing(
    queue: Queue, engine: Any, run_jobs_now: Any
) -> None:
    first = in_an_hour()
    obj = post("moved", when=first)
    later = first + datetime.timedelta(minutes=30)
    obj.published_at = later
    obj.save()
    old_id, new_id = expected_job_id(obj, first), expected_job_id(obj, later)
    assert scheduled(queue) == {old_id: first, new_id: later}

    jobs = {job.id: job for job in run_jobs_now()}
    assert jobs[old_id].get_status() == JobStatus.FINISHED
    assert jobs[old_id].return_value() == "not submitted: its publication time moved"
    assert jobs[new_id].get_status() == JobStatus.FINISHED
    assert jobs[new_id].return_value() == "submitted 1 URL(s)"
    assert engine.posted_urls() == [f"{BASE}/posts/moved/"]
    assert FailedJobRegistry(queue=queue).count == 0


def test_a_slug_changed_after_scheduling_sends_the_current_url(
    queue: Queue, engine: Any, run_jobs_now: Any
) -> None:
    when = in_an_hour()
    obj = post("first-slug", when=when)
    obj.slug = "final-slug"
    obj.save()
    assert list(scheduled(queue)) == [expected_job_id(obj, when)]
    [job] = run_jobs_now()
    assert job.get_status() == JobStatus.FINISHED
    assert engine.posted_urls() == [f"{BASE}/posts/final-slug/"]


def test_a_job_scheduled_by_an_earlier_version_still_sends_the_url(
    queue: Queue, engine: Any, run_jobs_now: Any
) -> None:
    """Publications scheduled before the stable path named the module the code lived in
    then, ``indexnow_django.scheduling``: a worker of this version still runs them."""
    when = in_an_hour()
    post("scheduled-long-ago", when=when)
    [job_id] = scheduled(queue)
    args = Job.fetch(job_id, connection=queue.connection).args
    ScheduledJobRegistry(queue=queue).remove(job_id, delete_job=True)
    queue.enqueue_at(when, "indexnow_django.scheduling.publish", *args, job_id=job_id)
    [job] = run_jobs_now()
    assert job.func_name == "indexnow_django.scheduling.publish"
    assert job.get_status() == JobStatus.FINISHED
    assert job.return_value() == "submitted 1 URL(s)"
    assert engine.posted_urls() == [f"{BASE}/posts/scheduled-long-ago/"]


@pytest.mark.parametrize("change", ["unpublish", "delete"])
def test_an_object_unpublished_or_deleted_before_firing_sends_nothing(
    change: str, queue: Queue, engine: Any, run_jobs_now: Any, caplog: pytest.LogCaptureFixture
) -> None:
    when = in_an_hour()
    obj = post("withdrawn", when=when)
    pk = obj.pk
    if change == "unpublish":
        obj.status = Post.DRAFT
        obj.save()
        reason = "it is not public"
    else:
        obj.delete()
        reason = "the object is gone"
    with caplog.at_level(logging.INFO, logger="indexnow_django.units.scheduling"):
        [job] = run_jobs_now()
    assert job.get_status() == JobStatus.FINISHED
    assert job.return_value() == f"not submitted: {reason}"
    assert engine.posts == []
    assert queue.count == 0
    assert FailedJobRegistry(queue=queue).count == 0
    at = when.astimezone(datetime.timezone.utc).isoformat()
    assert (
        f"IndexNow publication model=testapp.Post pk={pk} at={at} not submitted: {reason}"
        in caplog.messages
    )


def test_a_job_for_a_model_no_longer_registered_is_a_no_op() -> None:
    assert publish("testapp.Untracked", 1, 1_700_000_000) == (
        "not submitted: its model is no longer registered"
    )
    assert publish("nope.Missing", 1, 1_700_000_000) == "not submitted: its model no longer exists"


@pytest.mark.worker
def test_a_job_fires_on_time_with_a_real_worker_and_sends_the_url(
    queue: Queue, engine: Any, start_worker: Any
) -> None:
    # The worker's own settings send synchronously, straight to the loopback engine.
    start_worker()
    when = datetime.datetime.fromtimestamp(math.ceil(time.time()) + 3, tz=datetime.timezone.utc)
    obj = post("on-time", when=when)
    assert list(scheduled(queue)) == [expected_job_id(obj, when)]
    [received] = engine.wait_for_posts(1, timeout=20)
    assert received.urls == [f"{BASE}/posts/on-time/"]
    assert received.received_at >= when.timestamp()  # at its time, not before it
    assert scheduled(queue) == {}


# Where scheduling cannot work -----------------------------------------------------------


def test_synchronous_dispatch_schedules_nothing_and_says_so(
    indexnow_settings: Any, queue: Queue, caplog: pytest.LogCaptureFixture
) -> None:
    indexnow_settings(DISPATCH="sync")
    with caplog.at_level(logging.WARNING, logger="indexnow_django"):
        obj = post("unschedulable", when=in_an_hour())
    assert scheduled(queue) == {}
    assert Post.objects.filter(pk=obj.pk).exists()
    [message] = [
        r.getMessage() for r in caplog.records if r.name == "indexnow_django.units.scheduling"
    ]
    assert message.startswith("IndexNow cannot schedule the publication model=testapp.Post")


def test_redis_down_never_breaks_the_save(settings: Any, caplog: pytest.LogCaptureFixture) -> None:
    settings.RQ_QUEUES = {"default": {"URL": "redis://127.0.0.1:9/0", "SOCKET_CONNECT_TIMEOUT": 1}}
    with caplog.at_level(logging.ERROR, logger="indexnow_django"):
        obj = post("redis-down", when=in_an_hour())
    assert Post.objects.filter(pk=obj.pk).exists()
    [record] = [r for r in caplog.records if r.name == "indexnow_django.units.scheduling"]
    assert record.getMessage().startswith(
        f"IndexNow could not schedule the publication model=testapp.Post pk={obj.pk} "
    )
    assert record.exc_info is not None


def test_check_warns_when_publish_at_meets_synchronous_dispatch(indexnow_settings: Any) -> None:
    assert check_scheduling() == []
    indexnow_settings(DISPATCH="sync")
    assert check_scheduling() == [
        checks.Warning(
            "testapp.Post sets publish_at, but DISPATCH is 'sync': publications cannot be "
            "scheduled, so objects saved before their publish_at are not submitted when it comes.",
            hint="Add 'default' to RQ_QUEUES (and set DISPATCH to 'auto' or 'queue'), and run "
            "manage.py rqworker --with-scheduler.",
            id="indexnow.W003",
        )
    ]


def test_check_names_auto_dispatch_without_the_queue(indexnow_settings: Any) -> None:
    indexnow_settings(DISPATCH="auto", QUEUE={"NAME": "elsewhere"})
    [warning] = check_scheduling()
    assert warning.id == "indexnow.W003"
    assert warning.msg.startswith(
        "testapp.Post sets publish_at, but DISPATCH is 'auto' and QUEUE['NAME'] 'elsewhere' "
        "is not in RQ_QUEUES:"
    )


def test_manage_py_check_reports_w003(indexnow_settings: Any) -> None:
    indexnow_settings(DISPATCH="sync")
    messages = checks.run_checks(tags=["indexnow"])
    assert [m.id for m in messages if m.id == "indexnow.W003"] == ["indexnow.W003"]
