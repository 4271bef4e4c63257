"""rq's transport (``DISPATCH: "queue"``): django-rq jobs, rq's scheduler, rq's workers.

A flush becomes one delivery job on ``QUEUE["NAME"]`` (:mod:`.queue`), or joins
the coalescing window's outbox (:mod:`.coalesce`), in one Redis round
trip. Workers of the package's class (:mod:`.worker`) run the jobs (:mod:`.jobs`),
send again those of dead workers and queue what web processes kept while Redis
was away (:mod:`.kept`). Retries and scheduled publications go through rq's
scheduler.

When Redis cannot take a flush, the URLs are sent from the web process and what
is not accepted is kept in the database for a worker. After an enqueue timed
out, the flushes of the next :data:`~indexnow_django.sending.breaker.WINDOW`
seconds skip the enqueue (:mod:`indexnow_django.sending.breaker`), so a frozen
Redis costs one flush its timeout, not every one; the flush whose enqueue timed
out is kept in the database rather than sent from here, since Redis may still
take its job when it answers again (the job and the kept row are sent once
between them).
"""

from __future__ import annotations

import logging
import time
from typing import TYPE_CHECKING

from redis.exceptions import TimeoutError as RedisTimeoutError

from ...sending.breaker import guard
from ...sending.inprocess import send_in_process
from ...sending.parcel import LIVENESS, Parcel
from ...sending.pending import ENQUEUE_TIMED_OUT, keep
from ..base import Enqueued, Publication, Transport
from .coalesce import add_to_window
from .queue import enqueue_parcel, get_queue, schedule_once

if TYPE_CHECKING:
    from django.core.checks import CheckMessage
    from django.http.response import HttpResponseBase
    from rq.queue import Queue

    from ...conf import IndexNowSettings
    from ...ops.findings import Diagnosis

#: A flush's lines are the dispatch's, whichever transport carries it.
logger = logging.getLogger("indexnow_django.dispatch")

__all__ = ["PUBLISH_FUNC", "RQTransport"]

#: The dotted path scheduled publications' jobs carry: a stable module's, wherever the
#: code lives (see ``indexnow_django.jobs``).
PUBLISH_FUNC = "indexnow_django.jobs.publish"


class RQTransport(Transport):
    """Parcels as django-rq jobs (see the module)."""

    name = "queue"
    forks_per_job = True
    workers_send_kept = True
    again = "Requeue the job to try again."

    def __init__(self, conf: IndexNowSettings, queue: Queue | None = None) -> None:
        super().__init__(conf)
        self._queue = queue

    @property
    def queue(self) -> Queue:
        """The queue ``QUEUE["NAME"]`` (looked up once)."""
        if self._queue is None:
            self._queue = get_queue(self.conf)
        return self._queue

    def take_flush(
        self,
        parcel: Parcel,
        response: HttpResponseBase | None = None,
        *,
        after_response: bool = False,
    ) -> None:
        conf = self.conf
        try:
            queue = get_queue(conf)
            with guard(queue.connection):
                if conf.queue_coalesce > 0 and not parcel.force and queue.is_async:
                    job_id = add_to_window(queue, parcel.urls, parcel.gone, conf)
                    self.log_flush(parcel, "coalesce", queue=queue.name, job=job_id)
                    return
                job = enqueue_parcel(queue, parcel, delay=conf.queue_delay, conf=conf)
        except RedisTimeoutError as exc:
            # Redis may still take the job when it answers again: sending the URLs from here
            # too would send them twice. Kept in the database instead, for a worker; whichever
            # of that and the job runs first sends them (see queue.first_run_of_batch).
            if keep(parcel, reason=f"{ENQUEUE_TIMED_OUT} ({type(exc).__name__}: {exc})"):
                logger.warning(
                    "IndexNow flush batch=%s mode=kept count=%d when=%s: queue %r timed out "
                    "(%s); the job may still reach Redis: kept in the database for a worker, "
                    "sent once",
                    parcel.batch_id,
                    len(parcel),
                    self.when(response, after_response),
                    conf.queue_name,
                    exc,
                )
                return
            send_in_process(parcel, conf, response)
            return
        except Exception as exc:  # Redis down, or anything else: never lose the URLs
            logger.warning(
                "IndexNow flush batch=%s mode=fallback count=%d when=%s: queue %r cannot take "
                "the job (%s: %s); sending from this process instead, and keeping in the "
                "database what is not accepted",
                parcel.batch_id,
                len(parcel),
                self.when(response, after_response),
                conf.queue_name,
                type(exc).__name__,
                exc,
            )
            send_in_process(parcel, conf, response, fallback=True)
            return
        extra = {} if queue.is_async else {"ran": "inline"}
        self.log_flush(parcel, "queue", queue=queue.name, job=job.id, **extra)

    def enqueue(self, parcel: Parcel, delay: float = 0) -> Enqueued:
        queue = self.queue
        job = enqueue_parcel(queue, parcel, delay=delay, conf=self.conf)
        failed = None
        if not queue.is_async and job.is_failed:
            # A synchronous queue (ASYNC: False) ran the job here and then.
            result = job.latest_result()
            lines = str(result.exc_string if result is not None else "").strip().splitlines()
            failed = lines[-1] if lines else "-"
        return Enqueued(str(job.id), failed)

    def cannot_defer(self) -> str | None:
        from django.conf import settings

        if self._queue is None and self.conf.queue_name not in getattr(settings, "RQ_QUEUES", {}):
            # deliver() called by hand on a site without the queue: it waits instead.
            return f"queue {self.conf.queue_name!r} is not in RQ_QUEUES"
        if self.queue.is_async:
            return None
        return (
            f"queue {self.queue.name!r} runs jobs synchronously (ASYNC: False) and cannot "
            "delay a job"
        )

    def send_later(self, parcel: Parcel, delay: float) -> str:
        return str(enqueue_parcel(self.queue, parcel, delay=delay, conf=self.conf).id)

    def near_deadline(self) -> str:
        return f"the job is near its timeout (QUEUE['TIMEOUT'] {self.conf.queue_timeout}s)"

    def put_back(self, parcel: Parcel, delay: float) -> str:
        """Into the outbox of its engine (:mod:`.coalesce`), due in ``delay`` seconds, where
        it goes out with whatever else waits for that engine; a job of its own when
        ``QUEUE["COALESCE"]`` is 0, the parcel ignores the debounce store, or it is a
        retry (an outbox keeps no attempt count: merged there, a retry would start its
        count over, and an engine that fails for ever would be asked for ever)."""
        if (
            self.conf.queue_coalesce <= 0
            or parcel.force
            or parcel.attempt > 1
            or not self.queue.is_async
        ):
            return self.send_later(parcel, delay)
        engines = parcel.engines or (None,)
        job_ids = [
            add_to_window(
                self.queue,
                parcel.urls,
                parcel.gone,
                self.conf,
                engine=engine,
                due=time.time() + delay,
            )
            for engine in engines
        ]
        return job_ids[-1]

    def schedule_publication(self, publication: Publication) -> str | None:
        job = schedule_once(
            self.queue,
            PUBLISH_FUNC,
            args=(publication.label, publication.pk, publication.timestamp),
            job_id=publication.job_id,
            at=publication.at,
            description=f"IndexNow: publish {publication.label} pk={publication.pk} "
            f"at {publication.at.isoformat()}",
            conf=self.conf,
        )
        return None if job is None else str(job.id)

    def cannot_schedule(self) -> tuple[str, str] | None:
        return None

    def cannot_record_crawls(self) -> tuple[str, str] | None:
        from .wiring import WORKER_CLASS_LINE, is_wired

        if is_wired():
            return None
        return (
            "rq's worker class is not this app's",
            f"Add {WORKER_CLASS_LINE}: its workers record the crawl receipts.",
        )

    def publication_state(self, publication: Publication) -> str:
        try:
            from rq.job import Job

            queue = self.queue
            if publication.job_id in queue.scheduled_job_registry.get_job_ids():
                return "waits in rq's scheduled job registry"
            if Job.exists(publication.job_id, connection=queue.connection):
                return "exists in rq, not in the scheduled registry (it ran, or is queued)"
            return "not found: save the object again to schedule it"
        except Exception as exc:
            return f"unknown: Redis cannot be asked ({type(exc).__name__}: {exc})"

    @property
    def how_flushes_go(self) -> str:
        name = self.conf.queue_name
        if self.conf.queue_coalesce > 0:
            return (
                f"the flushes of every {self.conf.queue_coalesce:g} s become one job on queue "
                f"{name!r}"
            )
        return f"each flush becomes a job on queue {name!r}"

    @property
    def describe(self) -> str:
        return f"queue {self.conf.queue_name!r}"

    # ------------------------------------------------------------ the operator's side

    def diagnose(self, diag: Diagnosis) -> list[str]:
        from .diagnose import diagnose

        return diagnose(diag, self.conf)

    def checks(self) -> list[CheckMessage]:
        from .checks import system_checks

        return system_checks(self.conf)


def _job_alive(job_id: str) -> bool:
    """Whether the rq job ``job_id`` is still waiting or running (not failed, gone, ended):
    a claim of the debounce store held by a dead job can be taken back."""
    from rq import get_current_job
    from rq.exceptions import NoSuchJobError
    from rq.job import Job, JobStatus

    from ...conf import get_settings
    from .queue import connection

    current = get_current_job()
    redis = current.connection if current is not None else connection(get_settings().queue_name)
    try:
        status = Job.fetch(job_id, connection=redis).get_status(refresh=False)
    except NoSuchJobError:
        return False
    return status in {JobStatus.QUEUED, JobStatus.STARTED, JobStatus.SCHEDULED, JobStatus.DEFERRED}


LIVENESS["job"] = _job_alive
