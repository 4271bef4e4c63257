"""``DISPATCH: "tasks"``: deliveries and publications as ``django.tasks`` tasks, on real
backends and real workers.

django-tasks-db's ``db_worker`` runs in a subprocess on the suite's database (SQLite,
or PostgreSQL with ``INDEXNOW_TEST_DATABASE=postgres``), django-tasks-rq's tasks on a
real rq worker, the ImmediateBackend in this process. Django 6.x uses ``django.tasks``,
Django 5.2 the django-tasks backport: the same tests run on both.
"""

from __future__ import annotations

import datetime
import json
import os
import subprocess
import sys
import time
from typing import Any

import pytest
from django.core import checks
from django.db import connection
from django.utils import timezone
from django_tasks_db.models import DBTaskResult

from indexnow_django import batch
from indexnow_django.checks import check_transport as check_tasks_wiring
from indexnow_django.compat.tasks import tasks_framework
from indexnow_django.conf import get_settings
from indexnow_django.models import TaskHeartbeat
from indexnow_django.testing import Reply
from indexnow_django.transports.tasks.enqueue import DELIVERY_TASK, PUBLISH_TASK, SWEEP_TASK
from indexnow_django.units.dispatch import dispatch
from indexnow_django.units.scheduling import check_scheduling
from tests.needs import UNTHROTTLED
from tests.rqhelpers import FAST_RETRY, FAST_SWEEP, wait_for_count, wait_until_idle
from tests.testapp.models import Page, Post
from tests.testapp.tasks import save_pages_task

pytestmark = pytest.mark.django_db(transaction=True)

KEY = "test-key-0123456789"
A = "https://www.example.com/a/"
B = "https://www.example.com/b/"
STATUS = tasks_framework().status  # type: ignore[union-attr]


def tasks_settings(indexnow_settings: Any, backend: str = "database", **changes: Any) -> Any:
    """Tasks dispatch on ``backend`` with fast retries, here and (returned) for a worker;
    these tests follow the task a flush makes, whose POSTs it sends itself (the throttle
    would hand a POST over to a later task)."""
    overrides: dict[str, Any] = {
        "DISPATCH": "tasks",
        "TASKS": {"BACKEND": backend, "QUEUE_NAME": "default"},
        "RETRY": dict(FAST_RETRY),
        **UNTHROTTLED,
        **changes,
    }
    indexnow_settings(**overrides)
    return overrides


def rows(task_path: str = DELIVERY_TASK) -> list[DBTaskResult]:
    return list(DBTaskResult.objects.filter(task_path=task_path).order_by("enqueued_at"))


def wait_for_rows(status: str, count: int, timeout: float = 30.0) -> list[DBTaskResult]:
    """Block until ``count`` delivery tasks exist and the last one has ``status``."""
    deadline = time.monotonic() + timeout
    while True:
        found = rows()
        if len(found) >= count and found[-1].status == status:
            return found
        if time.monotonic() > deadline:
            states = [(str(r.id), r.status, r.args_kwargs["kwargs"]) for r in found]
            raise AssertionError(f"delivery tasks {states} after {timeout:g}s")
        time.sleep(0.1)


def wait_until_done(*task_paths: str, timeout: float = 30.0) -> None:
    """Block until no task of ``task_paths`` (deliveries by default) waits or runs, and no
    delivery's heartbeat is left for a sweep to act on: no task is left that could send."""
    paths = task_paths or (DELIVERY_TASK,)
    deadline = time.monotonic() + timeout
    while True:
        left = [
            (row.task_path, row.status)
            for path in paths
            for row in rows(path)
            if row.status in (STATUS.READY, STATUS.RUNNING)
        ]
        beats = TaskHeartbeat.objects.count()
        if not left and not beats:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"tasks {left}, {beats} heartbeat(s) after {timeout:g}s")
        time.sleep(0.1)


# ---------------------------------------------------------------- enqueueing


def test_a_flush_is_one_task_carrying_plain_strings(indexnow_settings, engine):
    tasks_settings(indexnow_settings)
    dispatch(["/a/", "/b/", B])

    [row] = rows()
    assert row.status == STATUS.READY
    assert row.backend_name == "database"
    assert row.queue_name == "default"
    batch_id = row.args_kwargs["kwargs"]["batch_id"]
    assert row.args_kwargs == {
        "args": [[A, B]],
        "kwargs": {"batch_id": batch_id, "attempt": 1, "force": False},
    }
    assert engine.posts == []


def test_a_backend_that_cannot_take_the_task_falls_back_to_a_send(
    indexnow_settings, engine, caplog, settings
):
    tasks_settings(indexnow_settings, TASKS={"BACKEND": "database", "QUEUE_NAME": "nope"})
    dispatch(["/a/"])

    [post] = engine.wait_for_posts(1)
    assert post.urls == [A]
    assert rows() == []
    assert "mode=fallback" in caplog.text
    assert "task backend 'database' cannot take the task" in caplog.text


# ---------------------------------------------------------------- the ImmediateBackend


def test_immediate_backend_delivers_at_once(indexnow_settings, engine):
    tasks_settings(indexnow_settings, backend="default")
    dispatch(["/a/"])

    [post] = engine.posts
    assert post.urls == [A]
    assert post.json["key"] == KEY


def test_immediate_backend_a_final_rejection_fails_the_task_with_the_hint(
    indexnow_settings, engine, caplog
):
    tasks_settings(indexnow_settings, backend="default")
    engine.queue_replies(Reply(403, body="key not valid"))

    from indexnow_django import tasks as stable

    result = stable.deliver.enqueue([A], batch_id="b403")

    assert result.status == STATUS.FAILED
    [error] = result.errors
    assert error.exception_class_path == "indexnow_django.exceptions.SubmissionRejected"
    assert "answered 403" in error.traceback
    assert "key not valid" in error.traceback
    assert "Run manage.py indexnow_check" in error.traceback
    assert "(the engine fetches the key from https://www.example.com/" in error.traceback


def test_immediate_backend_a_429_is_not_retried_and_says_why(indexnow_settings, engine):
    tasks_settings(indexnow_settings, backend="default")
    engine.queue_replies(Reply(429))

    from indexnow_django import tasks as stable

    result = stable.deliver.enqueue([A], batch_id="b429")

    assert len(engine.posts) == 1
    assert result.status == STATUS.FAILED
    [error] = result.errors
    assert "RetriesExhausted" in error.exception_class_path
    assert (
        "not retried after attempt 1 of 3: task backend 'default' (ImmediateBackend) cannot "
        "delay a task" in error.traceback
    )


def test_a_task_run_by_the_immediate_backend_is_one_unit_of_work(indexnow_settings, engine):
    """In a plain script (no request, no command): three saves, one flush at the task's end."""
    indexnow_settings(DISPATCH="sync")
    save_pages_task.using(backend="default").enqueue(["/one/", "/two/", "/three/"])

    # The immediate backend ran the task, and its flush sent, before enqueue returned.
    [post] = engine.posts
    assert post.urls == [f"https://www.example.com/{p}/" for p in ("one", "two", "three")]


def test_a_task_run_inside_a_batch_is_flushed_when_the_task_ends(indexnow_settings, engine):
    indexnow_settings(DISPATCH="sync")
    with batch():
        Page.objects.create(path="/before/")
        save_pages_task.using(backend="default").enqueue(["/one/", "/two/"])
        assert [post.urls for post in engine.posts] == [
            ["https://www.example.com/one/", "https://www.example.com/two/"]
        ]
    assert [post.urls for post in engine.posts][-1] == ["https://www.example.com/before/"]


# ---------------------------------------------------------------- checks


def test_a_backend_that_cannot_defer_is_a_warning(indexnow_settings):
    tasks_settings(indexnow_settings, backend="default")
    immediate = "ImmediateBackend"
    assert check_tasks_wiring() == [
        checks.Warning(
            f"INDEXNOW dispatches to tasks but task backend 'default' ({immediate}) cannot "
            "delay a task (its supports_defer is False): retries and scheduled publications "
            "do not run there (a 429 or a 5xx is not sent again).",
            hint="Use a backend that runs tasks later in a worker, such as django-tasks-db's "
            "DatabaseBackend with manage.py db_worker.",
            id="indexnow.W009",
        )
    ]
    [warning] = check_scheduling()
    assert warning.id == "indexnow.W003"
    assert "testapp.Post sets publish_at, but task backend 'default'" in warning.msg


def test_a_backend_that_defers_has_no_warning(indexnow_settings):
    tasks_settings(indexnow_settings)
    assert check_tasks_wiring() == []
    assert check_scheduling() == []


def test_a_queue_the_backend_does_not_serve_stops_delivery(indexnow_settings):
    tasks_settings(indexnow_settings, TASKS={"BACKEND": "database", "QUEUE_NAME": "nope"})
    [message] = check_tasks_wiring()
    assert message.id == "indexnow.W010"
    assert "'nope' is not a queue of task backend 'database'" in message.msg


def test_an_unknown_backend_alias_is_a_settings_error(indexnow_settings, settings):
    from indexnow_django.conf import validate

    tasks_settings(indexnow_settings, TASKS={"BACKEND": "missing"})
    [problem] = validate()
    assert problem.id == "indexnow.E023"
    assert problem.msg == (
        "INDEXNOW['DISPATCH'] is 'tasks' but INDEXNOW['TASKS']['BACKEND'] 'missing' is not in "
        "settings.TASKS."
    )
    configured = ", ".join(settings.TASKS)  # "celery" too where a Celery backend is installed
    assert problem.hint == (
        f"Add 'missing' to TASKS, or set INDEXNOW['TASKS']['BACKEND'] to one of: {configured}."
    )


# ---------------------------------------------------------------- django-tasks-db's worker


@pytest.mark.worker
def test_db_worker_delivers_the_task(indexnow_settings, engine, start_db_worker):
    overrides = tasks_settings(indexnow_settings)
    dispatch(["/a/", "/b/"])
    start_db_worker(overrides)

    [post] = engine.wait_for_posts(1, timeout=30)
    assert post.urls == [A, B]
    [row] = wait_for_rows(STATUS.SUCCESSFUL, 1)
    assert row.return_value["accepted"] == 2
    assert row.return_value["retry_jobs"] == []


@pytest.mark.worker
def test_db_worker_at_the_shipped_throttle_a_flush_is_one_task(
    indexnow_settings, engine, start_db_worker
):
    """At the shipped defaults (the throttle on, the debounce store in the worker's memory),
    the task of a flush sends to a quiet engine itself: no second task for a wait of 0.0s."""
    overrides = {"DISPATCH": "tasks", "TASKS": {"BACKEND": "database", "QUEUE_NAME": "default"}}
    indexnow_settings(**overrides)
    dispatch(["/a/"])
    worker = start_db_worker(overrides)

    [post] = engine.wait_for_posts(1, timeout=30)
    assert post.urls == [A]
    [row] = wait_for_rows(STATUS.SUCCESSFUL, 1)
    assert row.return_value["accepted"] == 1
    assert "IndexNow throttled" not in worker.output()


@pytest.mark.worker
def test_db_worker_429_is_sent_again_after_retry_after(indexnow_settings, engine, start_db_worker):
    overrides = tasks_settings(indexnow_settings, RETRY={**FAST_RETRY, "BASE_DELAY": 30})
    engine.queue_replies(Reply(429, headers={"Retry-After": "2"}))
    dispatch(["/a/"])
    worker = start_db_worker(overrides)

    first, second = engine.wait_for_posts(2, timeout=30)
    assert first.urls == second.urls == [A]
    assert second.received_at - first.received_at >= 2.0
    one, two = wait_for_rows(STATUS.SUCCESSFUL, 2)
    assert one.return_value["retry_jobs"] == [str(two.id)]
    batch_id = one.args_kwargs["kwargs"]["batch_id"]
    assert two.args_kwargs["kwargs"] == {
        "batch_id": batch_id,
        "attempt": 2,
        "force": False,
        "engines": [engine.url],
    }
    assert two.run_after >= one.started_at + datetime.timedelta(seconds=2)
    # Retry-After, not BASE_DELAY: enqueued before the first task ended, for 2 s later,
    # rounded up to a whole second.
    assert two.run_after <= one.finished_at + datetime.timedelta(seconds=3)
    assert two.return_value["accepted"] == 1
    assert "status=429 attempt=2/3 in=2.0s" in worker.output()


@pytest.mark.worker
def test_db_worker_403_fails_the_task_with_the_answer_and_the_hint(
    indexnow_settings, engine, start_db_worker
):
    overrides = tasks_settings(indexnow_settings)
    engine.queue_replies(Reply(403, body="UserForbiddedToAccessSite"))
    dispatch(["/a/"])
    start_db_worker(overrides)

    [row] = wait_for_rows(STATUS.FAILED, 1)
    assert row.exception_class_path == "indexnow_django.exceptions.SubmissionRejected"
    assert "1 URL for www.example.com: " in row.traceback
    assert "UserForbiddedToAccessSite" in row.traceback
    assert "Run manage.py indexnow_check" in row.traceback
    assert f"https://www.example.com/{KEY[:4]}" in row.traceback  # the key file, masked
    wait_until_done()  # a retry would be a task enqueued before this one failed
    assert [r.status for r in rows()] == [STATUS.FAILED]
    assert len(engine.posts) == 1  # not retried


@pytest.mark.worker
def test_db_worker_a_site_task_saving_objects_gives_one_follow_up_post(
    indexnow_settings, engine, start_db_worker
):
    overrides = tasks_settings(indexnow_settings)
    save_pages_task.using(backend="database").enqueue(["/one/", "/two/", "/three/"])
    start_db_worker(overrides)

    [post] = engine.wait_for_posts(1, timeout=30)
    assert post.urls == [f"https://www.example.com/{p}/" for p in ("one", "two", "three")]
    # The site's task enqueues its deliveries before it ends: once it and they are done,
    # every delivery it made has sent.
    wait_until_done(save_pages_task.module_path, DELIVERY_TASK)
    assert [r.status for r in rows()] == [STATUS.SUCCESSFUL]
    assert len(engine.posts) == 1


@pytest.mark.worker
def test_db_worker_scheduled_publication_runs_at_its_moment(
    indexnow_settings, engine, start_db_worker
):
    overrides = tasks_settings(indexnow_settings)
    when = timezone.now() + datetime.timedelta(seconds=3)
    Post.objects.create(title="soon", slug="soon", status=Post.PUBLISHED, published_at=when)
    Post.objects.filter(slug="soon").first().save()  # scheduling the same moment again
    assert engine.posts == []
    [row] = rows(PUBLISH_TASK)
    assert row.run_after >= when
    assert row.args_kwargs["args"][0] == "testapp.Post"
    start_db_worker(overrides)

    [post] = engine.wait_for_posts(1, timeout=30)
    assert post.urls == ["https://www.example.com/posts/soon/"]
    assert post.received_at >= when.timestamp()
    row.refresh_from_db()
    assert row.status == STATUS.SUCCESSFUL
    assert row.return_value == "submitted 1 URL(s)"


@pytest.mark.worker
def test_db_worker_a_moved_publication_is_a_no_op(indexnow_settings, engine, start_db_worker):
    overrides = tasks_settings(indexnow_settings)
    when = timezone.now() + datetime.timedelta(seconds=1)
    post = Post.objects.create(title="m", slug="m", status=Post.PUBLISHED, published_at=when)
    post.published_at = timezone.now() + datetime.timedelta(hours=1)
    post.save()
    start_db_worker(overrides)

    wait_for_count(
        lambda: DBTaskResult.objects.filter(
            task_path=PUBLISH_TASK, status=STATUS.SUCCESSFUL
        ).count(),
        1,
        timeout=30,
    )
    [done] = DBTaskResult.objects.filter(task_path=PUBLISH_TASK, status=STATUS.SUCCESSFUL)
    assert done.return_value == "not submitted: its publication time moved"
    assert engine.posts == []


@pytest.mark.worker
def test_db_worker_killed_mid_post_is_sent_again_by_another_worker(
    indexnow_settings, engine, start_db_worker
):
    overrides = tasks_settings(
        indexnow_settings, HTTP={"TIMEOUT": 30}, DEBOUNCE={"CACHE": "shared", "TTL": 600}
    )
    engine.queue_replies(Reply(200, delay=25))  # answered after the worker is gone
    dispatch(["/a/"])
    doomed = start_db_worker(overrides, extra_env=FAST_SWEEP)
    engine.wait_for_posts(1, timeout=30)
    [orphan] = rows()
    assert orphan.status == STATUS.RUNNING
    start_db_worker(overrides, extra_env=FAST_SWEEP)  # the one left running

    doomed.kill()

    posts = engine.wait_for_posts(2, timeout=60)
    assert [post.urls for post in posts] == [[A], [A]]
    dead, successor = wait_for_rows(STATUS.SUCCESSFUL, 2)
    assert dead.id == orphan.id
    assert dead.status == STATUS.FAILED
    batch_id = orphan.args_kwargs["kwargs"]["batch_id"]
    assert dead.traceback == (
        f"IndexNow batch {batch_id}: worker {doomed.name} died while sending attempt 1; "
        f"sent again as task {successor.id} (attempt 2/3)."
    )
    assert successor.args_kwargs["kwargs"]["attempt"] == 2
    assert successor.args_kwargs["kwargs"]["batch_id"] == batch_id
    wait_until_done()  # no delivery waits or runs, no heartbeat is left to sweep
    assert len(rows()) == 2
    assert len(engine.posts) == 2


@pytest.mark.worker
def test_db_worker_a_delivery_schedules_a_sweep_and_sweeping_stops_when_none_runs(
    indexnow_settings, engine, start_db_worker
):
    """One worker: the sweep the delivery scheduled runs after it, finds no delivery
    running, and schedules no other; no sweep is left waiting."""
    overrides = tasks_settings(indexnow_settings)
    dispatch(["/a/"])
    start_db_worker(overrides, extra_env=FAST_SWEEP)
    engine.wait_for_posts(1, timeout=30)
    wait_for_rows(STATUS.SUCCESSFUL, 1)

    deadline = time.monotonic() + 30
    while not [row for row in rows(SWEEP_TASK) if row.status == STATUS.SUCCESSFUL]:
        assert time.monotonic() < deadline, [(row.status, row.run_after) for row in rows()]
        time.sleep(0.2)
    # A successor is scheduled (a row of its own) by the sweep before it ends, and its
    # return value names it: one row, and no next one.
    [sweep] = rows(SWEEP_TASK)
    assert sweep.status == STATUS.SUCCESSFUL
    assert sweep.return_value == {"resent": [], "next": None}


def running_delivery(started_ago: float, **kwargs: Any) -> DBTaskResult:
    """A delivery task that a worker claimed ``started_ago`` seconds ago."""
    from indexnow_django.sending.parcel import Parcel
    from indexnow_django.transports.tasks.enqueue import enqueue_parcel

    task_id = enqueue_parcel(Parcel.of([A], batch_id="b-orphan"), conf=get_settings())
    row = DBTaskResult.objects.get(pk=task_id)
    row.claim("worker-elsewhere")
    DBTaskResult.objects.filter(pk=row.pk).update(
        started_at=timezone.now() - datetime.timedelta(seconds=started_ago)
    )
    return row


def dead_pid() -> int:
    child = subprocess.Popen([sys.executable, "-c", "pass"])
    child.wait()
    return child.pid


@pytest.mark.parametrize(
    ("host", "pid", "beat_age", "resent"),
    [
        ("here", "alive", 3600, False),  # renewals held back by a busy database: alive
        ("here", "dead", 0, True),  # its process ended: gone at once
        ("elsewhere", "alive", 3600, True),  # another machine: only the heartbeat tells
        ("elsewhere", "alive", 1, False),
        (None, None, None, True),  # it never wrote one
    ],
)
def test_a_running_delivery_is_sent_again_only_when_its_worker_is_gone(
    host, pid, beat_age, resent, indexnow_settings, engine
):
    from indexnow_django.transports.tasks import worker as tasks

    tasks_settings(indexnow_settings)
    row = running_delivery(started_ago=60)
    if host is not None:
        TaskHeartbeat.objects.create(
            task_id=str(row.id),
            beat_at=timezone.now() - datetime.timedelta(seconds=beat_age),
            host=tasks._HOST if host == "here" else "another-machine",
            pid=os.getpid() if pid == "alive" else dead_pid(),
        )

    successors = tasks.resend_orphans()

    row.refresh_from_db()
    if not resent:
        assert successors == []
        assert row.status == STATUS.RUNNING
        return
    [successor] = successors
    assert row.status == STATUS.FAILED
    assert "worker worker-elsewhere died while sending attempt 1" in row.traceback
    new = DBTaskResult.objects.get(pk=successor)
    assert new.args_kwargs["args"] == [[A]]
    assert new.args_kwargs["kwargs"]["attempt"] == 2
    assert tasks.resend_orphans() == []  # taken once
    assert TaskHeartbeat.objects.count() == 0


def test_a_delivery_that_started_moments_ago_is_left_alone(indexnow_settings):
    from indexnow_django.transports.tasks import worker as tasks

    tasks_settings(indexnow_settings)
    running_delivery(started_ago=2)
    assert tasks.resend_orphans() == []


def test_an_orphan_at_the_last_attempt_fails_naming_the_count(indexnow_settings):
    from indexnow_django.transports.tasks import worker as tasks

    tasks_settings(indexnow_settings, RETRY={**FAST_RETRY, "MAX_ATTEMPTS": 1})
    row = running_delivery(started_ago=60)

    assert tasks.resend_orphans() == []
    row.refresh_from_db()
    assert row.status == STATUS.FAILED
    assert row.traceback == (
        "IndexNow batch b-orphan: worker worker-elsewhere died while sending attempt 1, the "
        "last one: gave up after 1 attempts (RETRY['MAX_ATTEMPTS'] is 1)."
    )
    assert len(rows()) == 1


def test_a_sweep_resends_orphans_and_schedules_the_next_while_deliveries_run(indexnow_settings):
    from indexnow_django.transports.heartbeat import sweep_every
    from indexnow_django.transports.tasks import worker as tasks

    tasks_settings(indexnow_settings)
    orphan = running_delivery(started_ago=60)  # no heartbeat: its worker is gone
    running_delivery(started_ago=2)  # still sending

    before = timezone.now()
    done = tasks.sweep_task()

    [successor] = done["resent"]
    orphan.refresh_from_db()
    assert orphan.status == STATUS.FAILED
    assert f"sent again as task {successor}" in orphan.traceback
    [following] = rows(SWEEP_TASK)
    assert done["next"] == str(following.id)
    assert following.status == STATUS.READY
    assert (following.queue_name, following.backend_name) == ("default", "database")
    due = (following.run_after - before).total_seconds()
    assert sweep_every() - 1 <= due <= sweep_every() + 1
    # A sweep that finds one waiting adds none: two at once become one again.
    assert tasks.sweep_task() == {"resent": [], "next": None}
    assert len(rows(SWEEP_TASK)) == 1


def test_a_sweep_with_no_delivery_running_schedules_none(indexnow_settings):
    from indexnow_django.transports.tasks import worker as tasks

    tasks_settings(indexnow_settings)
    dispatch(["/a/"])  # waiting, not running: it schedules a sweep when it starts
    assert tasks.sweep_task() == {"resent": [], "next": None}
    assert rows(SWEEP_TASK) == []


def test_a_sweep_is_scheduled_once_however_many_deliveries_ask(indexnow_settings):
    """Each delivery that starts asks (see the worker tests): one sweep waits."""
    from indexnow_django.transports.tasks import worker as tasks

    tasks_settings(indexnow_settings)
    first = tasks.schedule_sweep(get_settings())
    assert first is not None
    assert tasks.schedule_sweep(get_settings()) is None
    assert [str(row.id) for row in rows(SWEEP_TASK)] == [first]


def test_the_sweep_is_not_counted_with_the_tasks_of_this_app(indexnow_settings):
    from indexnow_django.transports.tasks import worker as tasks

    tasks_settings(indexnow_settings, DEBOUNCE={"CACHE": "shared"})
    tasks.schedule_sweep(get_settings())
    output = run_check()
    assert (
        "tasks of this app: 0 waiting to run, 0 scheduled (retries, publications), 0 running, "
        "0 failed; the sweep for dead workers' deliveries is due in " in output
    )


def test_the_database_is_the_one_under_test():
    """The same tests run on SQLite and on PostgreSQL (INDEXNOW_TEST_DATABASE)."""
    assert connection.vendor in ("sqlite", "postgresql")


# ---------------------------------------------------------------- django-tasks-rq

RQ_JOB_CLASS = ["--job-class", "django_tasks_rq.Job"]


@pytest.mark.worker
def test_rq_backend_delivers_and_retries_after_retry_after(
    indexnow_settings, engine, start_worker, redis_conn
):
    overrides = tasks_settings(indexnow_settings, backend="rq")
    engine.queue_replies(Reply(429, headers={"Retry-After": "1"}))
    dispatch(["/a/", "/b/"])
    worker = start_worker(overrides, extra_args=RQ_JOB_CLASS)

    first, second = engine.wait_for_posts(2, timeout=30)
    assert first.urls == second.urls == [A, B]
    assert second.received_at - first.received_at >= 1.0
    output = worker.wait_for_output("status=200 outcome=accepted")
    assert "status=429 attempt=2/3 in=1.0s" in output  # the delay Retry-After asks
    assert output.count("IndexNow POST batch=") == 2


@pytest.mark.worker
def test_rq_backend_a_site_task_saving_objects_gives_one_follow_up_post(
    indexnow_settings, engine, start_worker, redis_conn
):
    overrides = tasks_settings(indexnow_settings, backend="rq")
    start_worker(overrides, extra_args=[*RQ_JOB_CLASS, "--worker-class", "rq.Worker"])
    save_pages_task.using(backend="rq").enqueue(["/one/", "/two/", "/three/"])

    [post] = engine.wait_for_posts(1, timeout=30)
    assert post.urls == [f"https://www.example.com/{p}/" for p in ("one", "two", "three")]
    wait_until_idle(redis_conn)  # the site's task and every delivery it made have run
    assert len(engine.posts) == 1


# ---------------------------------------------------------------- indexnow_check


def run_check(*args: str) -> str:
    from io import StringIO

    from django.core.management import call_command

    out = StringIO()
    call_command("indexnow_check", "--offline", *args, stdout=out)
    return out.getvalue()


def test_indexnow_check_reports_the_backend_whether_it_defers_and_what_waits(indexnow_settings):
    tasks_settings(indexnow_settings, DEBOUNCE={"CACHE": "shared"})
    dispatch(["/a/"])
    dispatch(["/b/"])
    DBTaskResult.objects.filter(pk=rows()[0].pk).update(status=STATUS.FAILED)
    Post.objects.create(
        title="later",
        slug="later",
        status=Post.PUBLISHED,
        published_at=timezone.now() + datetime.timedelta(hours=1),
    )

    output = run_check()
    assert (
        "DISPATCH 'tasks': each flush becomes a task on backend 'database' (queue 'default')"
        in output
    )
    assert (
        "backend 'database' (django_tasks_db.backend.DatabaseBackend, "
        f"{tasks_framework().name}), queue 'default': queues tasks; defers tasks "  # type: ignore[union-attr]
        "(retries and scheduled publications run)" in output
    )
    assert (
        "tasks of this app: 1 waiting to run, 1 scheduled (retries, publications), 0 running, "
        "1 failed" in output
    )
    assert "python manage.py db_worker --backend database --queue-name default" in output


def test_indexnow_check_warns_about_a_backend_that_cannot_defer(indexnow_settings):
    tasks_settings(indexnow_settings, backend="default", DEBOUNCE={"CACHE": "shared"})
    output = run_check()
    assert "runs each task as it is enqueued; cannot defer" in output
    assert "WARN" in output and "indexnow.W009" in output


# ---------------------------------------------------------------- what operators use


@pytest.mark.worker
def test_indexnow_submit_queues_on_the_task_backend_for_a_db_worker(
    indexnow_settings, engine, start_db_worker, redis_conn
):
    """Without ``--sync``, ``indexnow_submit`` hands its URLs to the task backend (not to an
    rq queue the site may not have), and a ``db_worker`` sends them."""
    from io import StringIO

    from django.core.management import call_command

    from tests.rqhelpers import all_job_ids

    overrides = tasks_settings(indexnow_settings)
    out = StringIO()
    call_command("indexnow_submit", "/a/", "/b/", stdout=out)
    assert "2 queued in 1 job(s)" in out.getvalue()
    assert "cannot take" not in out.getvalue()  # no fallback
    [row] = rows()
    assert row.args_kwargs["args"] == [[A, B]]
    assert row.args_kwargs["kwargs"]["force"] is False
    assert all_job_ids(redis_conn) == set()  # nothing on rq
    assert engine.posts == []

    start_db_worker(overrides)
    [post] = engine.wait_for_posts(1, timeout=30)
    assert post.urls == [A, B]
    wait_for_rows(STATUS.SUCCESSFUL, 1)


@pytest.mark.worker
def test_explain_says_a_publication_waits_as_a_task_that_a_db_worker_then_runs(
    indexnow_settings, engine, start_db_worker
):
    from io import StringIO

    from django.core.management import call_command

    overrides = tasks_settings(indexnow_settings, DEBOUNCE={"CACHE": "shared", "TTL": 600})
    when = (timezone.now() + datetime.timedelta(seconds=3)).replace(microsecond=0)
    post = Post.objects.create(title="Soon", slug="soon", status=Post.PUBLISHED, published_at=when)
    out = StringIO()
    call_command("indexnow_explain", "testapp.Post", str(post.pk), "--json", stdout=out)
    scheduled = json.loads(out.getvalue())["scheduled"]
    assert scheduled["state"] == (
        "enqueued on task backend 'database' with run_after at its moment"
    )
    [task] = rows(PUBLISH_TASK)
    assert task.run_after is not None and task.run_after >= when

    start_db_worker(overrides)
    [sent] = engine.wait_for_posts(1, timeout=40)
    assert sent.urls == ["https://www.example.com/posts/soon/"]
    assert sent.received_at >= when.timestamp()


@pytest.mark.worker
def test_send_again_in_the_admin_queues_a_task_for_a_db_worker(
    client, indexnow_settings, engine, start_db_worker, history_on
):
    from tests.conftest import make_delivery
    from tests.test_admin import LIST, staff

    record = make_delivery(urls=f"{A}\n{B}")
    overrides = tasks_settings(indexnow_settings, **history_on)
    staff(client, "indexnow.view_delivery", "indexnow.send_again")
    response = client.post(
        LIST, {"action": "send_again", "_selected_action": [record.pk]}, follow=True
    )
    assert "2 URLs of 1 record(s) queued for delivery" in response.content.decode()
    [row] = rows()
    assert row.args_kwargs["kwargs"]["force"] is True  # ignoring the debounce store
    assert engine.posts == []  # not from the web process

    start_db_worker(overrides)
    [post] = engine.wait_for_posts(1, timeout=30)
    assert post.urls == [A, B]
