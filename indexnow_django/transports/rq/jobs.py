"""The rq jobs of delivery: a parcel per job, a coalescing window's job, dead workers' jobs.

:func:`deliver` is the job (enqueued under its stable path
``indexnow_django.jobs.deliver``): it runs the sending core
(:func:`indexnow_django.sending.run.run_parcel`) on the parcel its arguments
carry, with the transport (:class:`~indexnow_django.transports.rq.RQTransport`) for
what the core gives back (retries through
rq's scheduler, held and left POSTs), a heartbeat while it sends, and a
deadline before its timeout after which it hands what is left to a new job
(:func:`~indexnow_django.sending.run.hand_over_after`).

A failed job requeued from the registry (``rq requeue`` or django-rq's admin)
sends again, and its attempts start over: after an outage it gets the whole
``MAX_ATTEMPTS`` again rather than failing at the first retryable answer.

A job on a synchronous queue (``"ASYNC": False``) runs in the process that
flushed, where no retry can be delayed: a retryable answer fails the job at
once, saying so, and it can be requeued from the failed job registry.

:func:`deliver_window` is the job of one coalescing window (:mod:`.coalesce`);
:func:`resend_orphans` and :func:`resend_stranded` send again the delivery jobs
of workers that died or could not start them (run by the worker class).
"""

from __future__ import annotations

import contextlib
import dataclasses
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from ... import signals
from ...conf import IndexNowSettings, get_settings
from ...exceptions import RetriesExhausted, SubmissionRejected
from ...protocol.client import Outcome, PostResult
from ...sending.parcel import Parcel, Runner, running
from ...sending.run import hand_over_after, run_parcel
from . import RQTransport
from .queue import (
    META_ATTEMPT,
    META_BATCH_ID,
    META_FAILED_AT,
    WINDOW_FUNC,
    enqueue_parcel,
    fail_job,
    first_run_of_batch,
    get_queue,
    heartbeat,
    is_parcel_job,
    orphaned_jobs,
    retire_job,
    stranded_jobs,
)

if TYPE_CHECKING:
    from rq.job import Job
    from rq.queue import Queue

logger = logging.getLogger(__name__)

__all__ = ["deliver", "deliver_window", "resend_orphans", "resend_stranded"]


def deliver(urls: Sequence[str], **carried: Any) -> dict[str, Any]:
    """Send ``urls`` to the engines; the keyword arguments are the rest of the parcel
    (:meth:`~indexnow_django.sending.parcel.Parcel.call`). See the module.

    Returns a summary (plain data, kept as the job's result).
    """
    from rq import get_current_job

    conf = get_settings()
    parcel = Parcel.from_call((urls,), carried)
    job = get_current_job()
    if job is not None and not is_parcel_job(job):
        job = None  # called by hand from a job of another kind
    if job is not None and job.meta.get(META_FAILED_AT) is not None:
        logger.info(
            "IndexNow requeued batch=%s job=%s: failed at attempt %s, attempts start over",
            parcel.batch_id,
            job.id,
            job.meta[META_FAILED_AT],
        )
        parcel = dataclasses.replace(parcel, attempt=1)
        del job.meta[META_FAILED_AT]
        job.save_meta()  # type: ignore[no-untyped-call]
    elif (
        job is not None
        and parcel.attempt == 1
        and parcel.engines is None
        and get_queue(conf).is_async
        and not first_run_of_batch(job, parcel.batch_id)
    ):
        # A flush whose enqueue timed out: its twin (the job that reached Redis late,
        # or the one made of the row kept in the database) has sent it.
        logger.warning(
            "IndexNow skipped batch=%s job=%s count=%d: another job of the batch ran (its "
            "enqueue had timed out, and it was kept in the database too)",
            parcel.batch_id,
            job.id,
            len(parcel),
        )
        return {
            "batch_id": parcel.batch_id,
            "attempt": parcel.attempt,
            "accepted": 0,
            "debounced": 0,
            "retry_jobs": [],
            "skipped": "twin ran",
        }
    runner = (
        running(Runner("job", str(job.id), str(job.origin or conf.queue_name)))
        if job is not None
        else contextlib.nullcontext()
    )
    try:
        with runner, _alive_while_sending(job, conf):
            return run_parcel(
                parcel,
                conf=conf,
                carrier=RQTransport(conf),
                # Called by hand (no worker): wait for the throttle rather than defer.
                wait=job is None,
                deadline=_hand_over_at(job, conf),
            )
    except (SubmissionRejected, RetriesExhausted):
        if job is not None:
            job.meta[META_FAILED_AT] = parcel.attempt  # a requeue starts over
            job.save_meta()  # type: ignore[no-untyped-call]
        raise


def _hand_over_at(job: Job | None, conf: IndexNowSettings) -> float | None:
    """The ``time.monotonic()`` after which this job hands what is left to a new job."""
    if job is None or not job.timeout or job.timeout < 0 or not get_queue(conf).is_async:
        return None
    return time.monotonic() + hand_over_after(float(job.timeout), conf.http_timeout)


def deliver_window(window: int) -> dict[str, Any]:
    """The job of one window of coalesced delivery: every URL of the outboxes into one job.

    See :mod:`indexnow_django.transports.rq.coalesce`. The delivery job goes to the front of
    the queue, so it runs next.
    """
    from rq import get_current_job

    from .coalesce import take_outbox, window_started

    conf = get_settings()
    queue = get_queue(conf)
    job = get_current_job()
    window_started(queue, window, conf)
    with _alive_while_sending(job, conf):
        window_jobs, count = take_outbox(queue, conf)
    if not window_jobs:
        return {"window": window, "count": 0}
    for taken in window_jobs:
        engines = taken.kwargs.get("engines")
        logger.info(
            "IndexNow window=%s count=%d batch=%s job=%s engines=%s: the URLs waiting in the "
            "window, in one delivery",
            window,
            len(taken.args[0]),
            taken.meta.get(META_BATCH_ID),
            taken.id,
            ",".join(engines) if engines else "all",
        )
    return {"window": window, "count": count, "jobs": [taken.id for taken in window_jobs]}


def _alive_while_sending(
    job: Job | None, conf: IndexNowSettings
) -> contextlib.AbstractContextManager[None]:
    """A heartbeat of ``job`` while it sends, when a worker runs it (see :func:`resend_orphans`)."""
    if job is None or not get_queue(conf).is_async:
        return contextlib.nullcontext()
    return heartbeat(job)


def resend_stranded(queue: Queue) -> list[str]:
    """Put back on ``queue`` the delivery jobs that a worker took but could not start
    (see :func:`indexnow_django.transports.rq.queue.stranded_jobs`); return their ids."""
    ids = []
    for job in stranded_jobs(queue):
        logger.warning(
            "IndexNow put back batch=%s job=%s: taken by a worker that could not start it "
            "(it stayed in rq's intermediate queue)",
            job.meta.get(META_BATCH_ID, "-"),
            job.id,
        )
        ids.append(job.id)
    return ids


def resend_orphans(queue: Queue) -> list[str]:
    """Send again the delivery jobs of ``queue`` whose whole worker died; return the new ids.

    Run by the worker class every few seconds (see :mod:`.worker`).
    An orphan counts as an attempt: it is sent again as a new job, with the
    same URLs, engines and batch id and the next attempt number, and removed
    from rq. At ``MAX_ATTEMPTS`` it goes to the failed job registry instead,
    with a message naming the count (requeued from there, it starts over).
    """
    conf = get_settings()
    resent: list[str] = []
    for job in orphaned_jobs(queue):
        if job.func_name == WINDOW_FUNC:  # its URLs are still in the outbox: a new window job
            from .coalesce import ensure_window_job

            retire_job(job, queue)
            successor_id = ensure_window_job(queue, conf)
            logger.warning(
                "IndexNow window job=%s: worker %s died running it; its URLs wait for job=%s",
                job.id,
                job.worker_name or "?",
                successor_id or "-",
            )
            if successor_id:
                resent.append(successor_id)
            continue
        parcel = Parcel.from_call(job.args, job.kwargs)
        batch_id = str(job.meta.get(META_BATCH_ID) or parcel.batch_id)
        attempt = int(job.meta.get(META_ATTEMPT) or parcel.attempt)
        worker = job.worker_name or "?"
        maximum = conf.retry.max_attempts
        if attempt >= maximum:
            message = (
                f"IndexNow batch {batch_id} gave up after {attempt} attempts "
                f"(RETRY['MAX_ATTEMPTS'] is {maximum}): worker {worker} died while running "
                "the last one. Requeue the job to try again."
            )
            job.meta[META_FAILED_AT] = attempt
            job.save_meta()  # type: ignore[no-untyped-call]
            fail_job(job, queue, message, conf)
            signals.given_up(_unanswered(job, conf, message), attempt=attempt, batch_id=batch_id)
            logger.error(
                "IndexNow failed batch=%s attempt=%d/%d job=%s: worker %s died",
                batch_id,
                attempt,
                maximum,
                job.id,
                worker,
            )
            continue
        successor = enqueue_parcel(
            queue,
            dataclasses.replace(parcel, batch_id=batch_id, attempt=attempt + 1, slot=None),
            conf=conf,
        )
        retire_job(job, queue)
        logger.warning(
            "IndexNow resent batch=%s attempt=%d/%d job=%s: worker %s died running job=%s",
            batch_id,
            attempt + 1,
            maximum,
            successor.id,
            worker,
            job.id,
        )
        resent.append(successor.id)
    return resent


def _unanswered(job: Job, conf: IndexNowSettings, message: str) -> list[PostResult]:
    """What a job that got no answer carried, as answers: per engine and host, its URLs."""
    from ...protocol.normalize import host_of

    wanted = job.kwargs.get("engines")
    engines = [e for e in conf.engines if wanted is None or e.endpoint in wanted]
    by_host: dict[str, list[str]] = {}
    for url in job.args[0]:
        by_host.setdefault(host_of(url), []).append(url)
    return [
        PostResult(engine, host, tuple(urls), Outcome.RETRY, None, message)
        for engine in engines
        for host, urls in by_host.items()
    ]
