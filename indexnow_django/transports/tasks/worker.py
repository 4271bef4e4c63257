"""What runs on the worker's side of ``DISPATCH: "tasks"``: the delivery task's work, and
delivery tasks of dead workers sent again.

:func:`deliver_task` runs :func:`indexnow_django.delivery.run.run_delivery`, the same
delivery as the rq job; only its carrier differs (:class:`TasksCarrier`): a retryable
answer becomes a new task for just those URLs and engines with ``run_after``
(``Retry-After``, else the backoff), when the backend ``supports_defer``; a final
rejection or the last attempt ends the task FAILED with the engine's answer and the
hint. Its stable path is ``indexnow_django.tasks.deliver``.

A django-tasks-db worker that dies mid-delivery leaves its task RUNNING for
ever. Each delivery on django-tasks-db keeps a
:class:`~indexnow_django.models.TaskHeartbeat` while it runs (written when it
starts, renewed every few seconds, removed when it ends;
:mod:`indexnow_django.transports.heartbeat`), and every ``db_worker`` looks every
few seconds for running delivery tasks whose worker is gone (:func:`resend_orphans`):
each is sent again as a new task (the next attempt), or at ``MAX_ATTEMPTS``
failed with a message naming the count. A worker is gone when its heartbeat
is older than the heartbeat's lifetime, or, on the machine that sweeps, when its
process has ended: SQLite lets one connection write at a time, so a busy database
can hold a live worker's heartbeat back.
"""

from __future__ import annotations

import contextlib
import dataclasses
import datetime
import logging
import os
import socket
import threading
import time
from collections.abc import Iterator
from typing import Any

from django.utils import timezone

from ...compat.tasks import is_db_worker, tasks_framework
from ...conf import IndexNowSettings, get_settings
from ...delivery.history import TASK_QUEUE_PREFIX
from ...delivery.parcel import Parcel, Runner, running
from ...delivery.run import run_delivery
from ..heartbeat import beating, heartbeat_ttl, sweep_every
from .enqueue import (
    DELIVERY_TASK,
    backend,
    cannot_defer,
    enqueue_delivery,
    is_database,
)

logger = logging.getLogger(__name__)

__all__ = ["TasksCarrier", "deliver_task", "resend_orphans", "watch_worker"]


def deliver_task(context: Any, urls: list[str], **carried: Any) -> dict[str, Any]:
    """The delivery task's work: send ``urls`` (the rest of the parcel in the keyword
    arguments); retries and held POSTs become new tasks (see the module)."""
    conf = get_settings()
    task_result = context.task_result
    runner = Runner("task", str(task_result.id), f"{TASK_QUEUE_PREFIX}{task_result.backend}")
    with running(runner), _heartbeat(task_result):
        return run_delivery(
            Parcel.from_call((urls,), carried), conf=conf, carrier=TasksCarrier(conf)
        )


class TasksCarrier:
    """Retries and held POSTs as new delivery tasks with ``run_after``."""

    again = "Submit its URLs again (the history's Send again, or manage.py indexnow_submit)."

    def __init__(self, conf: IndexNowSettings) -> None:
        self.conf = conf

    def cannot_defer(self) -> str | None:
        return cannot_defer(self.conf)

    def send_later(self, parcel: Parcel, delay: float) -> str:
        return enqueue_delivery(parcel, delay=delay, conf=self.conf)

    put_back = send_later


# --------------------------------------------------------------------------- dead workers

#: The delivery tasks running in this process (never orphans to its own sweeper).
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
                successor = enqueue_delivery(
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


_sweeping = threading.Lock()


def watch_worker(command: Any) -> None:
    """Called for each management command: ``db_worker`` gets a thread that sends again the
    delivery tasks of dead workers every few seconds
    (:func:`~indexnow_django.transports.heartbeat.sweep_every`), as long as it runs."""
    if not is_db_worker(command):
        return
    if not _sweeping.acquire(blocking=False):
        return  # one sweeper per process

    def sweep() -> None:
        from django.db import connections

        while True:
            try:
                conf = get_settings()
                if conf.enabled and _tasks_here(conf):
                    resend_orphans(conf)
            except Exception:
                logger.exception("IndexNow could not look for delivery tasks of dead workers")
            finally:
                connections.close_all()  # this thread's
            time.sleep(sweep_every())

    threading.Thread(target=sweep, name="indexnow-task-sweeper", daemon=True).start()


def _tasks_here(conf: IndexNowSettings) -> bool:
    """Whether the chosen transport is django.tasks' (the worker then sweeps for it)."""
    from .. import chosen
    from . import TasksTransport

    return isinstance(chosen(conf), TasksTransport)
