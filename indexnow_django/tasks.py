"""The ``django.tasks`` tasks of ``DISPATCH: "tasks"``, and delivery tasks of dead workers.

:data:`deliver` runs :func:`indexnow_django.jobs.run_delivery`, the same delivery
as the rq job; only its :class:`~indexnow_django.jobs.Transport` differs: a
retryable answer becomes a new task for just those URLs and engines with
``run_after`` (``Retry-After``, else the backoff), when the backend
``supports_defer``; a final rejection or the last attempt ends the task FAILED
with the engine's answer and the hint. :data:`publish` is a scheduled
publication, judged when it runs by :func:`indexnow_django.scheduling.publish`.
They are enqueued by :mod:`indexnow_django.taskqueue`.

Both are built when first looked up (this module imports without a tasks
framework and reads no settings at import), under the dotted paths that tasks
carry: ``indexnow_django.tasks.deliver`` and ``indexnow_django.tasks.publish``.

A django-tasks-db worker that dies mid-delivery leaves its task RUNNING for
ever. Each delivery on django-tasks-db keeps a
:class:`~indexnow_django.models.TaskHeartbeat` while it runs (written when it
starts, renewed every :data:`~indexnow_django.queue.HEARTBEAT_EVERY` seconds,
removed when it ends), and every ``db_worker`` looks every :data:`SWEEP_EVERY`
seconds for running delivery tasks whose worker is gone (:func:`resend_orphans`):
each is sent again as a new task (the next attempt), or at ``MAX_ATTEMPTS``
failed with a message naming the count. A worker is gone when its heartbeat
is older than :data:`~indexnow_django.queue.HEARTBEAT_TTL` seconds, or, on the
machine that sweeps, when its process has ended: SQLite lets one connection
write at a time, so a busy database can hold a live worker's heartbeat back.
"""

from __future__ import annotations

import contextlib
import datetime
import logging
import os
import socket
import threading
import time
from collections.abc import Callable, Iterator, Sequence
from typing import Any

from django.utils import timezone

from .compat import tasks_framework
from .conf import IndexNowSettings, get_settings
from .jobs import run_delivery
from .queue import HEARTBEAT_EVERY, HEARTBEAT_TTL, env_seconds, heartbeat_ttl
from .taskqueue import DELIVERY_TASK, backend, cannot_defer, enqueue_delivery, is_database

logger = logging.getLogger(__name__)

__all__ = ["FUNCTIONS", "SWEEP_EVERY", "SWEEP_EVERY_ENV", "resend_orphans", "watch_worker"]

#: Seconds between two looks of a ``db_worker`` for delivery tasks whose worker died ...
SWEEP_EVERY = 10
#: ... unless this environment variable (the rq worker's too) gives another whole number.
SWEEP_EVERY_ENV = "INDEXNOW_SWEEP_EVERY"


def _deliver(
    context: Any,
    urls: list[str],
    *,
    gone: Sequence[str] = (),
    batch_id: str = "-",
    attempt: int = 1,
    engines: Sequence[str] | None = None,
    force: bool = False,
    slot: float | None = None,
) -> dict[str, Any]:
    """The delivery task: send ``urls``; retries and throttled POSTs become new tasks (see
    the module). ``slot``: the throttle's slot this task was deferred to."""
    from .history import in_task

    conf = get_settings()
    task_result = context.task_result
    with _heartbeat(task_result), in_task(str(task_result.id), task_result.backend):
        return run_delivery(
            urls,
            gone=gone,
            batch_id=batch_id,
            attempt=attempt,
            engines=engines,
            force=force,
            slot=slot,
            conf=conf,
            transport=_Tasks(conf),
        )


def _publish(label: str, pk: Any, timestamp: int) -> str:
    """The scheduled publication task: see :func:`indexnow_django.scheduling.publish`."""
    from .scheduling import publish

    return publish(label, pk, timestamp)


# The names the tasks carry: the framework imports ``<module>.<qualname>``.
_deliver.__name__ = _deliver.__qualname__ = "deliver"
_publish.__name__ = _publish.__qualname__ = "publish"
#: The task functions by name, for :func:`indexnow_django.taskqueue.make_task`.
FUNCTIONS: dict[str, Callable[..., Any]] = {"deliver": _deliver, "publish": _publish}


def __getattr__(name: str) -> Any:
    """``deliver`` and ``publish``: the tasks, on the configured backend and queue."""
    if name in FUNCTIONS:
        from .taskqueue import make_task

        return make_task(name, get_settings(resolve_hosts=False))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


class _Tasks:
    """Retries as new delivery tasks with ``run_after``."""

    again = "Submit its URLs again (the history's Send again, or manage.py indexnow_submit)."
    in_worker = True

    def __init__(self, conf: IndexNowSettings) -> None:
        self.conf = conf

    def cannot_defer(self) -> str | None:
        return cannot_defer(self.conf)

    def send_later(
        self,
        urls: Sequence[str],
        *,
        gone: Sequence[str],
        batch_id: str,
        attempt: int,
        engines: Sequence[str],
        force: bool,
        delay: float,
        slot: float | None = None,
    ) -> str:
        return enqueue_delivery(
            urls,
            gone=gone,
            batch_id=batch_id,
            attempt=attempt,
            engines=engines,
            force=force,
            delay=delay,
            slot=slot,
            conf=self.conf,
        )


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

    from .models import TaskHeartbeat

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

    stop = threading.Event()
    every = HEARTBEAT_EVERY * heartbeat_ttl() / HEARTBEAT_TTL

    def keep_beating() -> None:
        try:
            while not stop.wait(every):
                beat()
        finally:
            connections.close_all()  # this thread's

    _running.add(task_id)
    beat()  # before the work starts
    thread = threading.Thread(target=keep_beating, name="indexnow-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(every)
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

    A RUNNING delivery task that started more than :data:`HEARTBEAT_TTL` seconds
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

    from .models import TaskHeartbeat

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
        kwargs = dict(row.args_kwargs.get("kwargs") or {})
        batch_id = str(kwargs.get("batch_id") or "-")
        attempt = int(kwargs.get("attempt") or 1)
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
                    row.args_kwargs["args"][0],
                    gone=kwargs.get("gone") or (),
                    batch_id=batch_id,
                    attempt=attempt + 1,
                    engines=kwargs.get("engines"),
                    force=bool(kwargs.get("force", False)),
                    conf=conf,
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
    delivery tasks of dead workers every :data:`SWEEP_EVERY` seconds, as long as it runs."""
    if type(command).__module__ != "django_tasks_db.management.commands.db_worker":
        return
    if not _sweeping.acquire(blocking=False):
        return  # one sweeper per process

    def sweep() -> None:
        from django.db import connections

        while True:
            try:
                conf = get_settings()
                if conf.enabled and conf.resolved_dispatch == "tasks":
                    resend_orphans(conf)
            except Exception:
                logger.exception("IndexNow could not look for delivery tasks of dead workers")
            finally:
                connections.close_all()  # this thread's
            time.sleep(env_seconds(SWEEP_EVERY_ENV, SWEEP_EVERY))

    threading.Thread(target=sweep, name="indexnow-task-sweeper", daemon=True).start()
