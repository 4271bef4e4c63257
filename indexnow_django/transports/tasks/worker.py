"""What runs on the worker's side of ``DISPATCH: "tasks"``: the delivery task's work, and
delivery tasks of dead workers sent again.

:func:`deliver_task` runs :func:`indexnow_django.sending.run.run_parcel`, the same
delivery as the rq job; only the transport that carries what it gives back differs
(:class:`~indexnow_django.transports.tasks.TasksTransport`): a retryable
answer becomes a new task for just those URLs and engines with ``run_after``
(``Retry-After``, else the backoff), when the backend ``supports_defer``; a final
rejection or the last attempt ends the task FAILED with the engine's answer and the
hint. Its stable path is ``indexnow_django.tasks.deliver``.

A django-tasks-db worker that dies mid-delivery leaves its task RUNNING for
ever. Each delivery on django-tasks-db keeps a
:class:`~indexnow_django.models.TaskHeartbeat` while it runs (written when it
starts, renewed every few seconds, removed when it ends;
:mod:`indexnow_django.transports.heartbeat`), and a task of its own, the sweep
(:func:`sweep_task`, ``indexnow_django.tasks.sweep``), looks for running delivery
tasks whose worker is gone (:func:`resend_orphans`): each is sent again as a new
task (the next attempt), or at ``MAX_ATTEMPTS`` failed with a message naming the
count. A delivery task that starts makes sure a sweep waits on its backend and
queue, due :func:`~indexnow_django.transports.heartbeat.sweep_every` seconds later
(:func:`schedule_sweep`), and each sweep schedules the next one as long as delivery
tasks run. Whichever ``db_worker`` takes the sweep runs it: a worker that died is
found by the others, or by itself once it is started again.

A worker is gone when its heartbeat is older than the heartbeat's lifetime, or,
on the machine that sweeps, when its process has ended: SQLite lets one
connection write at a time, so a busy database can hold a live worker's
heartbeat back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import logging
import os
import socket
from collections.abc import Iterator
from typing import Any

from django.utils import timezone

from ...compat.tasks import tasks_framework
from ...conf import IndexNowSettings, get_settings
from ...sending.parcel import Parcel, Runner, running
from ...sending.run import run_parcel
from ..heartbeat import beating, heartbeat_ttl, sweep_every
from . import TasksTransport
from .enqueue import (
    DELIVERY_TASK,
    SWEEP_TASK,
    TASK_QUEUE_PREFIX,
    backend,
    enqueue_parcel,
    is_database,
    make_task,
)

logger = logging.getLogger(__name__)

__all__ = ["deliver_task", "resend_orphans", "schedule_sweep", "sweep_task"]


def deliver_task(context: Any, urls: list[str], **carried: Any) -> dict[str, Any]:
    """The delivery task's work: send ``urls`` (the rest of the parcel in the keyword
    arguments); retries and held POSTs become new tasks. On django-tasks-db it first
    makes sure a sweep is scheduled (see the module)."""
    conf = get_settings()
    task_result = context.task_result
    runner = Runner("task", str(task_result.id), f"{TASK_QUEUE_PREFIX}{task_result.backend}")
    if is_database(task_result.task.get_backend()):
        _keep_sweeping(conf)
    with running(runner), _heartbeat(task_result):
        return run_parcel(
            Parcel.from_call((urls,), carried), conf=conf, carrier=TasksTransport(conf)
        )


# --------------------------------------------------------------------------- dead workers

#: The delivery tasks running in this process (never orphans to a sweep it runs).
_running: set[str] = set()
_HOST = socket.gethostname()[:255]


@contextlib.contextmanager
def _heartbeat(task_result: Any) -> Iterator[None]:
    """Keep the task's heartbeat while it delivers, on django-tasks-db. Never raises for
    the database: a heartbeat that cannot be written is logged."""
    if not is_database(task_result.task.get_backend()):
        yield
        return
    from django.db import connections

    from ...models import TaskHeartbeat

    task_id = str(task_result.id)

    def beat() -> bool:
        try:
            TaskHeartbeat.objects.update_or_create(
                task_id=task_id,
                defaults={"beat_at": timezone.now(), "host": _HOST, "pid": os.getpid()},
            )
        except Exception as exc:
            logger.warning(
                "IndexNow heartbeat of task=%s not written (%s: %s)",
                task_id,
                type(exc).__name__,
                exc,
            )
            return False
        return True

    _running.add(task_id)
    try:
        with beating(beat, thread_done=connections.close_all):  # the thread's connection
            yield
    finally:
        _running.discard(task_id)
        try:
            TaskHeartbeat.objects.filter(task_id=task_id).delete()
        except Exception:
            logger.warning("IndexNow could not remove the heartbeat of task=%s", task_id)


def _process_alive(pid: int) -> bool:
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True  # another user's process
    return True


def _gone(row: Any, beats: dict[str, Any], cutoff: datetime.datetime) -> bool:
    """Whether the worker of the RUNNING delivery task ``row`` is gone."""
    task_id = str(row.id)
    if task_id in _running:
        return False
    beat = beats.get(task_id)
    if beat is None:
        return True  # it never wrote one (it started long ago: see resend_orphans)
    if beat.host == _HOST:
        return not _process_alive(beat.pid)
    return bool(beat.beat_at < cutoff)


def resend_orphans(conf: IndexNowSettings | None = None) -> list[str]:
    """Send again the delivery tasks of django-tasks-db whose worker died; return the new ids.

    A RUNNING delivery task that started more than :func:`heartbeat_ttl` seconds
    ago and whose worker is gone (see the module) is taken by one worker only
    (its row changes from RUNNING in the same transaction as the new task is
    enqueued) and marked FAILED, saying so; it is sent again with the same URLs,
    engines and batch id and the next attempt, or, at ``MAX_ATTEMPTS``, not sent
    again, the message naming the count. Does nothing for another backend.
    """
    conf = conf or get_settings()
    if not is_database(backend(conf)):
        return []
    from django.db import transaction
    from django_tasks_db.models import DBTaskResult

    from ...models import TaskHeartbeat

    framework = tasks_framework()
    assert framework is not None
    running = framework.status.RUNNING
    cutoff = timezone.now() - datetime.timedelta(seconds=heartbeat_ttl())
    rows = list(
        DBTaskResult.objects.filter(
            status=running,
            task_path=DELIVERY_TASK,
            backend_name=conf.tasks_backend,
            started_at__lt=cutoff,
        )
    )
    if not rows:
        return []
    beats = {
        beat.task_id: beat
        for beat in TaskHeartbeat.objects.filter(task_id__in=[str(row.id) for row in rows])
    }
    resent: list[str] = []
    for row in rows:
        if not _gone(row, beats, cutoff):
            continue
        parcel = Parcel.from_call(row.args_kwargs["args"], row.args_kwargs.get("kwargs") or {})
        batch_id, attempt = parcel.batch_id, parcel.attempt
        worker = (row.worker_ids or ["?"])[-1]
        maximum = conf.retry.max_attempts
        died = f"IndexNow batch {batch_id}: worker {worker} died while sending attempt {attempt}"
        with transaction.atomic(using=DBTaskResult.objects.db):
            successor = None
            if attempt >= maximum:
                message = (
                    f"{died}, the last one: gave up after {attempt} attempts "
                    f"(RETRY['MAX_ATTEMPTS'] is {maximum})."
                )
            else:
                successor = enqueue_parcel(
                    dataclasses.replace(parcel, attempt=attempt + 1, slot=None), conf=conf
                )
                message = (
                    f"{died}; sent again as task {successor} (attempt {attempt + 1}/{maximum})."
                )
            taken = DBTaskResult.objects.filter(pk=row.pk, status=running).update(
                status=framework.status.FAILED,
                finished_at=timezone.now(),
                exception_class_path="indexnow_django.exceptions.RetriesExhausted",
                traceback=message,
            )
            if not taken:  # another worker took it, or it ended meanwhile
                transaction.set_rollback(True, using=DBTaskResult.objects.db)
                continue
            TaskHeartbeat.objects.filter(task_id=str(row.id)).delete()
        if successor is None:
            logger.error(
                "IndexNow failed batch=%s attempt=%d/%d task=%s: worker %s died",
                batch_id,
                attempt,
                maximum,
                row.id,
                worker,
            )
        else:
            logger.warning(
                "IndexNow resent batch=%s attempt=%d/%d task=%s: worker %s died running task=%s",
                batch_id,
                attempt + 1,
                maximum,
                successor,
                worker,
                row.id,
            )
            resent.append(successor)
    return resent


def sweep_task() -> dict[str, Any]:
    """The sweep task's work: send again the delivery tasks of dead workers
    (:func:`resend_orphans`), then, while delivery tasks still run, schedule the next
    sweep (:func:`schedule_sweep`).

    Returns the ids of the tasks sent again (``resent``) and of the next sweep
    (``next``: ``None`` when no delivery runs; the next one to start schedules a sweep).
    Does nothing unless ``DISPATCH`` is ``"tasks"`` on django-tasks-db and ``ENABLED``.
    """
    conf = get_settings()
    if not (conf.enabled and _tasks_here(conf) and is_database(backend(conf))):
        return {"resent": [], "next": None}
    try:
        resent = resend_orphans(conf)
    finally:  # a sweep that failed (its row says why) still has a successor
        following = schedule_sweep(conf) if _runs_under_way(conf) else None
    return {"resent": resent, "next": following}


def schedule_sweep(conf: IndexNowSettings) -> str | None:
    """Enqueue a sweep on ``TASKS["BACKEND"]`` and ``QUEUE_NAME``, due in
    :func:`~indexnow_django.transports.heartbeat.sweep_every` seconds, unless one waits
    there already; return its id (``None``: one waits). One query when one waits;
    raises what the database raises.

    Two workers that ask at the same moment may both enqueue one: a sweep that finds
    another waiting schedules no successor, so they are soon one again.
    """
    from django_tasks_db.models import DBTaskResult

    framework = tasks_framework()
    assert framework is not None
    waiting = DBTaskResult.objects.filter(
        status=framework.status.READY,
        task_path=SWEEP_TASK,
        backend_name=conf.tasks_backend,
        queue_name=conf.tasks_queue,
    )
    if waiting.exists():
        return None
    due = timezone.now() + datetime.timedelta(seconds=sweep_every())
    return str(make_task("sweep", conf, due).enqueue().id)


def _keep_sweeping(conf: IndexNowSettings) -> None:
    """A delivery starts on django-tasks-db: make sure a sweep is scheduled. Never raises
    (the delivery goes on; a sweep is scheduled by the next one)."""
    try:
        schedule_sweep(conf)
    except Exception as exc:
        logger.warning(
            "IndexNow could not schedule the sweep for delivery tasks of dead workers (%s: %s)",
            type(exc).__name__,
            exc,
        )


def _runs_under_way(conf: IndexNowSettings) -> bool:
    """Whether a delivery task runs on ``TASKS["BACKEND"]`` (the sweep is still needed)."""
    from django_tasks_db.models import DBTaskResult

    framework = tasks_framework()
    assert framework is not None
    return bool(
        DBTaskResult.objects.filter(
            status=framework.status.RUNNING,
            task_path=DELIVERY_TASK,
            backend_name=conf.tasks_backend,
        ).exists()
    )


def _tasks_here(conf: IndexNowSettings) -> bool:
    """Whether the chosen transport is django.tasks' (the sweep then works for it)."""
    from .. import chosen
    from . import TasksTransport

    return isinstance(chosen(conf), TasksTransport)
