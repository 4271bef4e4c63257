"""The rq worker class: a unit of work per job, and delivery jobs of dead workers sent again.

A job that saves tracked objects (one of the site's own jobs, not only ours)
produces URLs like a request does. :class:`Worker` wraps each job it performs
in :func:`indexnow_django.units.collector.batch`, so those URLs are flushed once,
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
retries it. It also registers itself again when Redis lost its registration (a
restart), starts its scheduler again when that process died (rq
would wait for its 10-minute maintenance), and queues the URLs that web
processes kept in the database while Redis could not take their jobs
(:mod:`.kept`), and, with ``CRAWL["ENABLED"]``, turns the crawlers' fetches that web
processes noticed into crawl receipts (:mod:`indexnow_django.crawl`). A busy worker
looks when it is idle again;
any idle worker of the queue will do. The test suite shortens the interval,
and the heartbeats of delivery jobs, with :data:`SWEEP_EVERY_ENV` and
:data:`~indexnow_django.transports.rq.queue.HEARTBEAT_TTL_ENV`.

A worker that has no scheduler running (it never got the lock, or its
scheduler died) asks for the lock at each look, and takes it over from a
holder that stopped: one whose process is gone from this machine, or whose
heartbeat is older than :data:`SCHEDULER_TAKEOVER_AFTER` seconds (its lock
would otherwise outlive it by a minute, and rq would ask again only in its
10-minute maintenance). After a Sentinel failover the dead holder's lock is on
the new master too: a scheduler runs again within seconds.

The worker rides out a lost Redis (a failover, a restart, a Redis that refuses
writes for memory) wherever rq would quit: its heartbeats while a job runs,
the end of a job, the suspension check and the maintenance. rq tolerates it
only while it waits for a job. A job whose end could not be recorded is left
to the look for dead workers' jobs (delivery jobs) and to rq's maintenance.

:class:`SimpleWorker` is the same for rq's non-forking worker, and
:class:`UnitOfWorkMixin` adds the behaviour to a worker class of your own.
"""

from __future__ import annotations

import json
import logging
import time
from typing import Any

from redis.exceptions import OutOfMemoryError, ReadOnlyError
from rq.worker import SimpleWorker as RQSimpleWorker
from rq.worker import Worker as RQWorker

from ...compat.rq import (
    reap_work_horse,
    scheduler_died,
    scheduler_running,
    take_over_scheduler_lock,
)
from ...conf import IndexNowSettings, get_settings, settings_fingerprint
from ...units.collector import batch
from .jobs import resend_orphans, resend_stranded
from .queue import get_queue
from .wiring import REDIS_OUTAGE, SETTINGS_FIELD, scheduler_death, sweep_every

logger = logging.getLogger(__name__)

__all__ = ["SimpleWorker", "UnitOfWorkMixin", "Worker"]


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

    Every member of rq's ``Worker`` it overrides is listed, with why, in
    :data:`indexnow_django.compat.rq.WORKER_HOOKS`, which ``tests/test_compat.py``
    checks against the installed rq.
    """

    #: What the checks look for in the configured worker class (see :func:`.wiring.is_wired`).
    indexnow_unit_of_work = True
    _indexnow_next_sweep = 0.0
    _indexnow_burst = False
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

    def work(self, burst: bool = False, *args: Any, **kwargs: Any) -> bool:
        self._indexnow_burst = bool(burst)
        worked: bool = super().work(burst, *args, **kwargs)  # type: ignore[misc]
        return worked

    def perform_job(self, *args: Any, **kwargs: Any) -> bool:
        with batch():
            result: bool = super().perform_job(*args, **kwargs)  # type: ignore[misc]
        return result

    @property
    def dequeue_timeout(self) -> int:
        return min(int(super().dequeue_timeout), sweep_every())  # type: ignore[misc]

    @property
    def should_run_maintenance_tasks(self) -> bool:
        rq_wants: bool = super().should_run_maintenance_tasks  # type: ignore[misc]
        return rq_wants or time.monotonic() >= self._indexnow_next_sweep

    def run_maintenance_tasks(self) -> None:
        self._indexnow_next_sweep = time.monotonic() + sweep_every()
        if super().should_run_maintenance_tasks:  # type: ignore[misc]
            try:
                super().run_maintenance_tasks()  # type: ignore[misc]
            except REDIS_OUTAGE as exc:
                self._redis_lost("rq's maintenance", exc)
        self.register_again()
        self.restart_scheduler()
        self.resend_orphans()
        self.ensure_windows()
        self.drain_crawls()
        self.enqueue_kept()

    # Riding out a lost Redis ------------------------------------------------------

    def _redis_lost(self, during: str, exc: Exception) -> None:
        # Look again (scheduler, orphans) as soon as Redis answers, not a sweep later.
        self._indexnow_next_sweep = 0.0
        logger.warning(
            "IndexNow: worker %s lost Redis during %s (%s: %s); carrying on",
            getattr(self, "name", "?"),
            during,
            type(exc).__name__,
            exc,
        )

    def heartbeat(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().heartbeat(*args, **kwargs)  # type: ignore[misc]
        except REDIS_OUTAGE as exc:
            self._redis_lost("its heartbeat", exc)

    def maintain_heartbeats(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().maintain_heartbeats(*args, **kwargs)  # type: ignore[misc]
        except REDIS_OUTAGE as exc:
            self._redis_lost("a job's heartbeat", exc)

    def set_current_job_working_time(self, *args: Any, **kwargs: Any) -> None:
        # rq 2 only (called while the work horse runs).
        try:
            super().set_current_job_working_time(*args, **kwargs)  # type: ignore[misc]
        except REDIS_OUTAGE as exc:
            self._redis_lost("a job's heartbeat", exc)

    def set_state(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().set_state(*args, **kwargs)  # type: ignore[misc]
        except REDIS_OUTAGE as exc:
            self._redis_lost("a change of state", exc)

    def dequeue_job_and_maintain_ttl(self, *args: Any, **kwargs: Any) -> Any:
        # rq waits out a lost connection here, not a Redis that refuses writes (taking a
        # job is one): out of memory, or a replica that was the master.
        wait = 1.0
        while True:
            try:
                return super().dequeue_job_and_maintain_ttl(*args, **kwargs)  # type: ignore[misc]
            except (OutOfMemoryError, ReadOnlyError) as exc:
                self._redis_lost(f"its wait for a job (again in {wait:g}s)", exc)
                time.sleep(wait)
                wait = min(wait * 2, 30.0)

    def check_for_suspension(self, *args: Any, **kwargs: Any) -> None:
        try:
            super().check_for_suspension(*args, **kwargs)  # type: ignore[misc]
        except REDIS_OUTAGE as exc:
            self._redis_lost("the suspension check", exc)

    def execute_job(self, job: Any, queue: Any) -> None:
        try:
            super().execute_job(job, queue)  # type: ignore[misc]
        except REDIS_OUTAGE as exc:
            self._redis_lost(f"job {job.id}", exc)
            # Never leave a work horse behind: wait for it as rq would have.
            reap_work_horse(self)
            logger.warning(
                "IndexNow: the end of job %s could not be recorded; a delivery job is sent "
                "again when its heartbeat has stopped, rq's maintenance fails any other",
                job.id,
            )

    def register_again(self) -> None:
        """Register this worker again when Redis lost its registration (a restart without
        persistence, a failover to a replica that never had it). Never raises.

        rq registers a worker once, when it starts; its heartbeats only renew the
        expiry of a hash they recreate without the rest. Unregistered, the worker still
        takes jobs but no one sees it: ``indexnow_check`` would say that no worker listens,
        and a second worker would be started beside it.
        """
        connection: Any = self.connection  # type: ignore[attr-defined]
        key: str = self.key  # type: ignore[attr-defined]
        # The set rq's own registration adds the worker to (rq:workers, under rq's prefix).
        workers_key = getattr(self, "redis_workers_keys", None)
        if not workers_key:
            return
        try:
            if connection.sismember(workers_key, key):
                return
            connection.delete(key)  # what heartbeats wrote since: rq refuses to register over it
            self.register_birth()
            logger.warning(
                "IndexNow: worker %s was no longer registered in Redis (Redis restarted?); "
                "registered it again",
                getattr(self, "name", "?"),
            )
        except REDIS_OUTAGE as exc:
            self._redis_lost("its registration", exc)
        except Exception:
            logger.exception("IndexNow could not register the worker again")

    # The scheduler ------------------------------------------------------------------

    def restart_scheduler(self) -> None:
        """Run this worker's scheduler if none runs for its queues: start it again when its
        process died (a Redis restart ends it), ask for the lock when another worker
        held it, and take the lock of a holder that stopped (see the module).

        rq does the first two in its maintenance only, every 10 minutes, and never the
        last: meanwhile retries and scheduled publications would wait. Never raises.
        """
        scheduler = getattr(self, "scheduler", None)
        if scheduler is None or self._indexnow_burst or scheduler_running(scheduler):
            return
        try:
            died = scheduler_died(scheduler)
            if died:
                logger.warning("IndexNow: the scheduler of this worker died; starting it again")
            for name, holder in take_over_scheduler_lock(scheduler, scheduler_death):
                logger.warning(
                    "IndexNow: took over the scheduler lock of queue %s from scheduler %s, "
                    "which has stopped",
                    name,
                    holder,
                )
            if scheduler.acquire_locks(auto_start=True) and not died:
                logger.info("IndexNow: this worker runs the scheduler now")
        except REDIS_OUTAGE as exc:
            self._redis_lost("the start of its scheduler", exc)
        except Exception:
            logger.exception("IndexNow could not start the scheduler again")

    def resend_orphans(self) -> None:
        """Send again the delivery jobs of this worker's queues whose worker died. Never raises."""
        for queue in self.queues:  # type: ignore[attr-defined]
            try:
                resend_stranded(queue)
                resend_orphans(queue)
            except REDIS_OUTAGE as exc:
                self._redis_lost("the look for orphaned jobs", exc)
            except Exception:
                logger.exception("IndexNow could not look for orphaned jobs queue=%s", queue.name)

    def ensure_windows(self) -> None:
        """With ``QUEUE["COALESCE"]``, a window job for URLs left in an outbox without one
        (see :mod:`indexnow_django.transports.rq.coalesce`). Never raises."""
        from .coalesce import ensure_window_job

        try:
            conf = get_settings()
            if conf.queue_coalesce > 0 and _queues_here(conf):
                for queue in self.queues:  # type: ignore[attr-defined]
                    if queue.name == conf.queue_name:
                        ensure_window_job(queue, conf)
        except Exception:
            logger.exception("IndexNow could not look for pending URLs without a window job")

    def drain_crawls(self) -> None:
        """With ``CRAWL["ENABLED"]``, verify the crawlers' fetches the web processes noticed
        and record the receipts (see :mod:`indexnow_django.crawl.receipts`). Never raises;
        the database connections are closed by :meth:`enqueue_kept`, which follows."""
        from ...crawl.receipts import drain

        try:
            conf = get_settings()
            if conf.enabled and conf.crawl_enabled and _queues_here(conf):
                for queue in self.queues:  # type: ignore[attr-defined]
                    if queue.name == conf.queue_name:
                        drain(queue.connection, conf)
        except REDIS_OUTAGE as exc:
            self._redis_lost("the crawl receipts", exc)
        except Exception:
            logger.exception("IndexNow could not record crawl receipts")

    def enqueue_kept(self) -> None:
        """Queue the URLs that web processes kept in the database while Redis could not take
        their jobs (see :mod:`.kept`). Never raises."""
        from django.db import connections

        from .kept import enqueue_kept

        try:
            conf = get_settings()
            if conf.enabled and _queues_here(conf):
                enqueue_kept(get_queue(conf), conf)
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


def _queues_here(conf: IndexNowSettings) -> bool:
    """Whether the chosen transport is rq's (the worker then drains what waits for it)."""
    from .. import chosen
    from . import RQTransport

    return isinstance(chosen(conf), RQTransport)
