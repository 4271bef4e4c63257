"""The worker class: a job of the site's own that saves tracked objects gets its URLs
flushed once, when it ends; and the check that says when the worker is not wired."""

from __future__ import annotations

from typing import Any

import django_rq
import pytest
from django.core import checks
from rq.worker import SimpleWorker as RQSimpleWorker
from rq.worker import Worker as RQWorker

from indexnow_django import worker as worker_module
from indexnow_django.checks import check_queue_wiring
from indexnow_django.dispatch import dispatch
from indexnow_django.jobs import deliver
from indexnow_django.queue import META_BATCH_ID
from tests.rqhelpers import (
    failed_ids,
    fetch,
    finished_ids,
    wait_for_count,
    wait_for_status,
)
from tests.testapp.jobs import (
    save_pages,
    save_pages_in_a_rolled_back_transaction,
    save_pages_then_fail,
)

PATHS = ["/one/", "/two/", "/three/"]
URLS = [f"https://www.example.com{path}" for path in PATHS]
QUEUE_SETTINGS = {"DISPATCH": "queue", "DEBOUNCE": {"CACHE": "shared"}}


def delivery_jobs(conn: Any) -> list[Any]:
    jobs = [fetch(conn, job_id) for job_id in finished_ids(conn) + failed_ids(conn)]
    return [job for job in jobs if job.func is deliver]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "worker_class", ["indexnow_django.worker.Worker", "indexnow_django.worker.SimpleWorker"]
)
def test_a_site_job_saving_objects_gives_one_follow_up_post(
    worker_class, engine, start_worker, redis_conn
):
    start_worker(QUEUE_SETTINGS, extra_args=["--worker-class", worker_class])
    job = django_rq.get_queue("default").enqueue(save_pages, PATHS)

    wait_for_status(redis_conn, [job.id], ["finished"])
    [post] = engine.wait_for_posts(1)
    assert post.urls == URLS
    wait_for_count(lambda: len(delivery_jobs(redis_conn)), 1)
    assert len(delivery_jobs(redis_conn)) == 1
    assert len(engine.posts) == 1


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_without_the_worker_class_each_save_is_sent_on_its_own(engine, start_worker, redis_conn):
    """The contrast that makes the one line worth adding."""
    start_worker(QUEUE_SETTINGS, extra_args=["--worker-class", "rq.Worker"])
    job = django_rq.get_queue("default").enqueue(save_pages, PATHS)

    wait_for_status(redis_conn, [job.id], ["finished"])
    posts = engine.wait_for_posts(3)
    assert [post.urls for post in posts] == [[url] for url in URLS]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_local_memory_cache_debounces_nothing_even_with_one_worker(
    engine, start_worker, indexnow_settings, redis_conn
):
    """What indexnow.W002 says: each job runs in a new process, with an empty LocMem cache."""
    settings = {"DISPATCH": "queue"}  # tests.settings' "default" cache is a LocMemCache
    indexnow_settings(**settings)
    [warning] = [m for m in check_queue_wiring() if m.id == "indexnow.W002"]
    assert "even with a single worker" in warning.msg
    start_worker(settings)
    for edit in range(1, 4):
        dispatch(["/edited-three-times/"])
        engine.wait_for_posts(edit)
    assert [post.urls for post in engine.posts] == [
        ["https://www.example.com/edited-three-times/"]
    ] * 3


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_failing_job_still_submits_what_it_committed(engine, start_worker, redis_conn):
    start_worker(QUEUE_SETTINGS)
    queue = django_rq.get_queue("default")
    failing = queue.enqueue(save_pages_then_fail, PATHS)
    rolled_back = queue.enqueue(save_pages_in_a_rolled_back_transaction, ["/never/"])

    wait_for_status(redis_conn, [failing.id], ["failed"])
    wait_for_status(redis_conn, [rolled_back.id], ["finished"])
    [post] = engine.wait_for_posts(1)
    assert post.urls == URLS
    wait_for_count(lambda: len(delivery_jobs(redis_conn)), 1)
    [delivery] = delivery_jobs(redis_conn)
    assert delivery.meta[META_BATCH_ID]
    assert len(engine.posts) == 1


# Wiring and its check ----------------------------------------------------------


class OwnWorker(worker_module.UnitOfWorkMixin, RQWorker):
    pass


@pytest.mark.parametrize(
    "value",
    [
        "indexnow_django.worker.Worker",
        "indexnow_django.worker.SimpleWorker",
        "tests.test_worker.OwnWorker",
        worker_module.Worker,
    ],
)
def test_wired(settings, value):
    settings.RQ = {"WORKER_CLASS": value}
    assert worker_module.is_wired()


@pytest.mark.parametrize(
    ("rq_setting", "path"),
    [
        ({}, "rq.worker.worker_classes.Worker"),
        ({"WORKER_CLASS": "rq.worker.SimpleWorker"}, "rq.worker.SimpleWorker"),
        ({"WORKER_CLASS": RQSimpleWorker}, "rq.worker.worker_classes.SimpleWorker"),
    ],
)
def test_not_wired_is_a_warning_with_the_one_line(settings, indexnow_settings, rq_setting, path):
    settings.RQ = rq_setting
    indexnow_settings(DISPATCH="queue", DEBOUNCE={"CACHE": "shared"})
    assert not worker_module.is_wired()
    assert worker_module.configured_worker_class()[0] == path
    assert check_queue_wiring() == [
        checks.Warning(
            f"INDEXNOW dispatches to a queue but the rq worker class {path!r} does not run each "
            "job in a unit of work: URLs that your jobs' saves produce are not submitted.",
            hint='Add RQ = {"WORKER_CLASS": "indexnow_django.worker.Worker"} to your settings, '
            "or add indexnow_django.worker.UnitOfWorkMixin to your own worker class.",
            id="indexnow.W001",
        )
    ]


def test_unimportable_worker_class_is_a_warning(settings, indexnow_settings):
    settings.RQ = {"WORKER_CLASS": "myproject.nowhere.Worker"}
    indexnow_settings(DISPATCH="queue", DEBOUNCE={"CACHE": "shared"})
    [warning] = check_queue_wiring()
    assert warning.id == "indexnow.W001"
    assert "'myproject.nowhere.Worker' cannot be imported" in warning.msg


def test_no_worker_warning_with_sync_dispatch(settings, indexnow_settings):
    settings.RQ = {}
    indexnow_settings(DISPATCH="sync")
    assert check_queue_wiring() == []


def test_the_line_users_add():
    assert worker_module.WORKER_CLASS_LINE == (
        'RQ = {"WORKER_CLASS": "indexnow_django.worker.Worker"}'
    )


@pytest.mark.worker
def test_a_scheduler_process_that_died_is_started_again_and_retries_run(
    engine, indexnow_settings, start_worker, redis_conn
):
    """A Redis restart may end the worker's scheduler process; rq would start it again
    in its maintenance only, 10 minutes later, and retries would wait until then."""
    import os
    import signal

    from indexnow_django.dispatch import dispatch
    from indexnow_django.testing import Reply
    from tests.rqhelpers import FAST_RETRY, wait_for_count

    overrides = {"DISPATCH": "queue", "RETRY": FAST_RETRY}
    indexnow_settings(**overrides)
    worker = start_worker(overrides)
    # An idle worker's one child is its scheduler, started just after the worker is ready.
    wait_for_count(lambda: len(worker.children()), 1)
    [scheduler] = worker.children()
    os.kill(scheduler, signal.SIGKILL)

    engine.queue_replies(Reply(429, headers={"Retry-After": "1"}))
    dispatch(["/a/"])

    posts = engine.wait_for_posts(2, timeout=30)
    assert [(post.urls, post.reply.status) for post in posts] == [
        (["https://www.example.com/a/"], 429),
        (["https://www.example.com/a/"], 200),
    ]
    assert "the scheduler of this worker died; starting it again" in worker.output()
