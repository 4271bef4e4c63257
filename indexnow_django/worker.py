"""The rq worker class: a unit of work per job, and delivery jobs of dead workers sent again.

A job that saves tracked objects (one of the site's own jobs, not only ours)
produces URLs like a request does. :class:`Worker` wraps each job it performs
in :func:`indexnow_django.collector.batch`, so those URLs are flushed once,
when the job ends, in the process that ran it (the forked work horse, whose
``os._exit`` would skip any ``atexit`` handler). Enable it with one line::

    RQ = {"WORKER_CLASS": "indexnow_django.worker.Worker"}

Each worker records in its rq registration a fingerprint of the ``INDEXNOW``
settings it started with (:data:`SETTINGS_FIELD`), so that ``indexnow_check``
can tell a worker left running with old settings.

While it waits for jobs, the worker also looks, every
:data:`SWEEP_EVERY` seconds, for delivery jobs whose whole worker died (killed,
a cold shutdown, a machine gone) and sends them again
(:func:`indexnow_django.jobs.resend_orphans`): without it rq leaves such a job
in its started job registry for about 13 minutes, then fails it, and never
retries it. It also starts its scheduler again when that process died (rq
would wait for its 10-minute maintenance), and queues the URLs that web
processes kept in the database while Redis could not take their jobs
(:mod:`indexnow_django.pending`). A busy worker looks when it is idle again;
any idle worker of the queue will do.

:class:`SimpleWorker` is the same for rq's non-forking worker, and
:class:`UnitOfWorkMixin` adds the behaviour to a worker class of your own.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from rq.worker import SimpleWorker as RQSimpleWorker
from rq.worker import Worker as RQWorker

from .collector import batch
from .compat import scheduler_died
from .conf import get_settings, settings_fingerprint
from .jobs import resend_orphans
from .queue import get_queue

logger = logging.getLogger(__name__)

__all__ = [
    "SETTINGS_FIELD",
    "SWEEP_EVERY",
    "WORKER_CLASS_LINE",
    "SimpleWorker",
    "UnitOfWorkMixin",
    "Worker",
    "configured_worker_class",
    "is_wired",
]

#: The line of settings that makes ``manage.py rqworker`` flush jobs' URLs.
WORKER_CLASS_LINE = 'RQ = {"WORKER_CLASS": "indexnow_django.worker.Worker"}'


#: Seconds between two looks for delivery jobs whose worker died.
SWEEP_EVERY = 10

#: The field of rq's worker hash (``rq:worker:<name>``) that holds, as JSON, the
#: :func:`~indexnow_django.conf.settings_fingerprint` of the settings the worker
#: started with; ``indexnow_check`` compares it with its own.
SETTINGS_FIELD = "indexnow_settings"


class UnitOfWorkMixin:
    """Runs each job in its own unit of work, flushed when the job ends; sends again the
    delivery jobs of dead workers.

    ``perform_job`` runs in the process that executes the job (the work
    horse). Its signature differs between rq versions (rq 3 adds the
    execution), so the arguments are passed through untouched.

    The look for dead workers' jobs rides on rq's maintenance hook, which the
    waiting worker consults each time it stops waiting: the wait is cut to
    :data:`SWEEP_EVERY` seconds, and the hook runs rq's own maintenance only
    when rq asks for it.
    """

    _indexnow_next_sweep = 0.0
    _kept_failed = False  # said once per process, then quietly

    def register_birth(self, *args: Any, **kwargs: Any) -> None:
        """rq's registration, and the fingerprint of the settings this worker runs with."""
        super().register_birth(*args, **kwargs)  # type: ignore[misc]
        try:
            self.connection.hset(  # type: ignore[attr-defined]
                self.key,  # type: ignore[attr-defined]
                SETTINGS_FIELD,
                json.dumps(settings_fingerprint()),
            )
        except Exception:
            logger.exception("IndexNow could not record the settings this worker runs with")

    def perform_job(self, *args: Any, **kwargs: Any) -> bool:
        with batch():
            result: bool = super().perform_job(*args, **kwargs)  # type: ignore[misc]
        return result

    @property
    def dequeue_timeout(self) -> int:
        return min(int(super().dequeue_timeout), SWEEP_EVERY)  # type: ignore[misc]

    @property
    def should_run_maintenance_tasks(self) -> bool:
        rq_wants: bool = super().should_run_maintenance_tasks  # type: ignore[misc]
        return rq_wants or time.monotonic() >= self._indexnow_next_sweep

    def run_maintenance_tasks(self) -> None:
        if super().should_run_maintenance_tasks:  # type: ignore[misc]
            super().run_maintenance_tasks()  # type: ignore[misc]
        self._indexnow_next_sweep = time.monotonic() + SWEEP_EVERY
        self.restart_scheduler()
        self.resend_orphans()
        self.enqueue_kept()

    def restart_scheduler(self) -> None:
        """Start this worker's scheduler again if its process died (a Redis restart ends it).

        rq does so in its maintenance only, every 10 minutes: meanwhile retries
        and scheduled publications would wait. Never raises.
        """
        scheduler = getattr(self, "scheduler", None)
        try:
            if scheduler is not None and scheduler_died(scheduler):
                logger.warning("IndexNow: the scheduler of this worker died; starting it again")
                scheduler.acquire_locks(auto_start=True)
        except Exception:
            logger.exception("IndexNow could not start the scheduler again")

    def resend_orphans(self) -> None:
        """Send again the delivery jobs of this worker's queues whose worker died. Never raises."""
        for queue in self.queues:  # type: ignore[attr-defined]
            try:
                resend_orphans(queue)
            except Exception:
                logger.exception("IndexNow could not look for orphaned jobs queue=%s", queue.name)

    def enqueue_kept(self) -> None:
        """Queue the URLs that web processes kept in the database while Redis could not take
        their jobs (see :mod:`indexnow_django.pending`). Never raises."""
        from django.db import connections

        from .pending import enqueue_pending

        try:
            conf = get_settings()
            if conf.enabled and conf.resolved_dispatch == "queue":
                enqueue_pending(get_queue(conf), conf)
        except Exception as exc:
            if not UnitOfWorkMixin._kept_failed:
                logger.exception("IndexNow could not queue the URLs kept in the database")
            else:
                logger.debug("IndexNow could not queue the URLs kept in the database: %s", exc)
            UnitOfWorkMixin._kept_failed = True
        finally:
            # rq forks work horses from this process: they must not share its connection.
            connections.close_all()


class Worker(UnitOfWorkMixin, RQWorker):
    """rq's forking worker, with a unit of work per job."""


class SimpleWorker(UnitOfWorkMixin, RQSimpleWorker):
    """rq's non-forking worker, with a unit of work per job."""


def configured_worker_class() -> tuple[str, type | None]:
    """The worker class ``manage.py rqworker`` uses: its dotted path and the class.

    The class is ``None`` when the path cannot be imported.
    """
    from django.conf import settings
    from django.utils.module_loading import import_string

    value: Any = (getattr(settings, "RQ", None) or {}).get("WORKER_CLASS", RQWorker)
    if isinstance(value, str):
        try:
            return value, import_string(value)
        except ImportError:
            return value, None
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}", value
    return repr(value), None


def is_wired() -> bool:
    """Whether ``manage.py rqworker`` (without ``--worker-class``) gives jobs a unit of work."""
    _, cls = configured_worker_class()
    return cls is not None and issubclass(cls, UnitOfWorkMixin)
