"""The rq job that sends a flush's URLs, retries through rq's scheduler, and fails finally.

:func:`deliver` runs in a worker. Its work is :func:`run_delivery`, which the
``django.tasks`` task (:mod:`indexnow_django.tasks`) runs too, each with its own
:class:`Transport` for what it sends later (retries, throttled POSTs): it sends
through :func:`indexnow_django.delivery.send.deliver_now` (debounce, group by host,
split, one POST per batch and engine) and then, from what each engine answered:



* accepted: recorded in the debounce store (by the submitter);
* retryable (429, 5xx, timeout, network error, ``SiteVerificationNotCompleted``):
  a *new* job per engine, for exactly the URLs that engine did not take, in
  ``conf.retry.delay(...)`` seconds through rq's scheduler, with the same batch
  id and ``attempt + 1``. At ``MAX_ATTEMPTS`` the job fails with
  :class:`~indexnow_django.exceptions.RetriesExhausted`;
* final rejection (400, 403, 422, other 4xx): the job fails at once with
  :class:`~indexnow_django.exceptions.SubmissionRejected`, so it lands in rq's
  failed job registry with the engine's answer and a hint.

A job never dies of its own size: its POSTs go out several at once (see
:mod:`indexnow_django.delivery.send`), and once :func:`hand_over_after` of its
timeout has passed it starts no more of them; what is left goes to a new job
per engine, at once, with the same batch id and attempt.

A failed job requeued from the registry (``rq requeue`` or django-rq's admin)
sends again, and its attempts start over: after an outage it gets the whole
``MAX_ATTEMPTS`` again rather than failing at the first retryable answer.

A job on a synchronous queue (``"ASYNC": False``) runs in the process that
flushed, where no retry can be delayed: a retryable answer fails the job at
once, saying so, and it can be requeued from the failed job registry.
"""

from __future__ import annotations

import contextlib
import logging
import time
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, Protocol

from . import signals
from .conf import IndexNowSettings, get_settings
from .delivery.send import DeliveryReport, deliver_now
from .exceptions import RetriesExhausted, SubmissionRejected
from .protocol.client import Outcome, PostResult
from .transports.rq.queue import (
    META_ATTEMPT,
    META_BATCH_ID,
    META_FAILED_AT,
    WINDOW_FUNC,
    enqueue_delivery,
    fail_job,
    first_run_of_batch,
    get_queue,
    heartbeat,
    is_delivery,
    new_batch_id,
    orphaned_jobs,
    retire_job,
    stranded_jobs,
)

if TYPE_CHECKING:
    from rq.job import Job
    from rq.queue import Queue

logger = logging.getLogger(__name__)

__all__ = [
    "Transport",
    "deliver",
    "deliver_window",
    "hand_over_after",
    "rejection_hint",
    "resend_orphans",
    "resend_stranded",
    "run_delivery",
]


def deliver(
    urls: Sequence[str],
    *,
    gone: Sequence[str] = (),
    batch_id: str | None = None,
    attempt: int = 1,
    engines: Sequence[str] | None = None,
    force: bool = False,
    slot: float | None = None,
) -> dict[str, Any]:
    """Send ``urls`` to the engines (all, or the endpoints in ``engines``); see the module.

    ``gone``: those of ``urls`` whose page is gone (unpublished, deleted). ``slot``:
    the throttle's slot this job was deferred to (for its one engine).

    Returns a summary (plain data, kept as the job's result).
    """
    from rq import get_current_job

    conf = get_settings()
    batch_id = batch_id or new_batch_id()
    job = get_current_job()
    if job is not None and not is_delivery(job):
        job = None  # called by hand from a job of another kind
    if job is not None and job.meta.get(META_FAILED_AT) is not None:
        logger.info(
            "IndexNow requeued batch=%s job=%s: failed at attempt %s, attempts start over",
            batch_id,
            job.id,
            job.meta[META_FAILED_AT],
        )
        attempt = 1
        del job.meta[META_FAILED_AT]
        job.save_meta()  # type: ignore[no-untyped-call]
    elif (
        job is not None
        and attempt == 1
        and engines is None
        and get_queue(conf).is_async
        and not first_run_of_batch(job, batch_id)
    ):
        # A flush whose enqueue timed out: its twin (the job that reached Redis late,
        # or the one made of the row kept in the database) has sent it.
        logger.warning(
            "IndexNow skipped batch=%s job=%s count=%d: another job of the batch ran (its "
            "enqueue had timed out, and it was kept in the database too)",
            batch_id,
            job.id,
            len(urls),
        )
        return {
            "batch_id": batch_id,
            "attempt": attempt,
            "accepted": 0,
            "debounced": 0,
            "retry_jobs": [],
            "skipped": "twin ran",
        }
    transport = _Queue(get_queue(conf), conf, in_worker=job is not None)
    deadline = _hand_over_at(job, conf)
    try:
        with _alive_while_sending(job, conf):
            return run_delivery(
                urls,
                gone=gone,
                batch_id=batch_id,
                attempt=attempt,
                engines=engines,
                force=force,
                slot=slot,
                deadline=deadline,
                conf=conf,
                transport=transport,
            )
    except (SubmissionRejected, RetriesExhausted):
        if job is not None:
            job.meta[META_FAILED_AT] = attempt  # a requeue starts over
            job.save_meta()  # type: ignore[no-untyped-call]
        raise


class Transport(Protocol):
    """What :func:`run_delivery` needs of whatever runs it: an rq job, a ``django.tasks`` task."""

    #: What a failure message tells the user to do to send again.
    again: str
    #: A worker runs the delivery: it never sleeps for the throttle, it sends later.
    in_worker: bool

    def cannot_defer(self) -> str | None:
        """Why a delivery cannot be put off here (a retry, a throttled POST), or ``None``."""

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
        """Put a new delivery of ``urls`` on the transport in ``delay`` seconds; its id."""


class _Queue:
    """Later deliveries as new rq jobs on the queue, through rq's scheduler."""

    again = "Requeue the job to try again."

    def __init__(self, queue: Queue, conf: IndexNowSettings, *, in_worker: bool = True) -> None:
        self.queue = queue
        self.conf = conf
        self.in_worker = in_worker  # not a call by hand, which can wait instead

    def cannot_defer(self) -> str | None:
        if self.queue.is_async:
            return None
        return (
            f"queue {self.queue.name!r} runs jobs synchronously (ASYNC: False) and cannot "
            "delay a job"
        )

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
        job = enqueue_delivery(
            self.queue,
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
        return str(job.id)


def run_delivery(
    urls: Sequence[str],
    *,
    gone: Sequence[str] = (),
    batch_id: str,
    attempt: int = 1,
    engines: Sequence[str] | None = None,
    force: bool = False,
    slot: float | None = None,
    deadline: float | None = None,
    conf: IndexNowSettings,
    transport: Transport,
) -> dict[str, Any]:
    """One delivery run by a worker, whatever the transport: send, then settle the answers.

    Sends through :func:`~indexnow_django.delivery.send.deliver_now`; what the
    throttle holds back and each retryable answer become new deliveries on
    ``transport`` (one per engine), a final rejection or the last attempt
    raises. ``deadline`` (a ``time.monotonic()``): no POST starts after it, what is
    left goes to new deliveries at once. Returns the summary a job or task keeps.
    """
    # A worker never sleeps for the throttle: POSTs it holds back become later deliveries.
    can_defer = transport.in_worker and transport.cannot_defer() is None
    report = deliver_now(
        urls,
        gone=gone,
        engines=engines,
        force=force,
        batch_id=batch_id,
        conf=conf,
        attempt=attempt,
        wait=not can_defer,
        slot=slot,
        deadline=deadline,
    )
    deferred_jobs = _defer(report, batch_id, attempt, force, conf, transport)
    handed_over = (
        _hand_over(report, batch_id, attempt, force, conf, transport) if report.left else []
    )
    if engines is not None and not report.results and not report.debounced and not deferred_jobs:
        configured = {e.endpoint for e in conf.engines} | {e.name for e in conf.engines}
        dropped = [engine for engine in engines if engine not in configured]
        if dropped:
            logger.warning(
                "IndexNow retry dropped batch=%s attempt=%d: engine(s) %s no longer in "
                "INDEXNOW['ENGINES']",
                batch_id,
                attempt,
                ", ".join(dropped),
            )

    retry_jobs: list[str] = []
    exhausted: list[PostResult] = []
    if report.retryable:
        retry_jobs, exhausted = _retry(report, batch_id, attempt, force, conf, transport)

    if exhausted:
        signals.given_up(exhausted, attempt=attempt, batch_id=batch_id)
    if report.rejected:
        raise _rejected(report.rejected, exhausted, batch_id, attempt, conf)
    if exhausted:
        raise _exhausted(exhausted, batch_id, attempt, conf, transport)
    summary: dict[str, Any] = {
        "batch_id": batch_id,
        "attempt": attempt,
        "accepted": report.sent_count,
        "debounced": report.debounced_count,
        "retry_jobs": retry_jobs,
    }
    if deferred_jobs:
        summary["deferred_jobs"] = deferred_jobs
    if handed_over:
        summary["handed_over"] = handed_over
    return summary


def _defer(
    report: DeliveryReport,
    batch_id: str,
    attempt: int,
    force: bool,
    conf: IndexNowSettings,
    transport: Transport,
) -> list[str]:
    """One delivery per engine for what the throttle held back, due at its slot; their ids.

    The same attempt: being held back is no attempt. The slot taken goes with the job,
    so that it is sent in it rather than queueing again behind later POSTs.
    """
    if not report.deferred:
        return []
    job_ids: list[str] = []
    for held in report.deferred:
        job_id = transport.send_later(
            held.urls,
            gone=[url for url in held.urls if url in report.gone],
            batch_id=batch_id,
            attempt=attempt,
            engines=[held.engine.endpoint],
            force=force,
            delay=held.delay,
            slot=held.slot,
        )
        logger.info(
            "IndexNow throttled batch=%s engine=%s count=%d in=%.1fs job=%s "
            "(THROTTLE['MAX_REQUESTS_PER_MINUTE'] is %s)",
            batch_id,
            held.engine.name,
            len(held.urls),
            held.delay,
            job_id,
            conf.throttle_per_minute,
        )
        job_ids.append(job_id)
    return job_ids


def hand_over_after(timeout: float, http_timeout: float) -> float:
    """Seconds into a job of ``timeout`` seconds after which it starts no POST.

    Its last POSTs may take ``http_timeout`` more: that fits, with a second to
    spare, while at least a fifth of the timeout is used for sending.
    """
    return max(timeout * 0.2, min(timeout * 0.6, timeout - http_timeout - 1))


def _hand_over_at(job: Job | None, conf: IndexNowSettings) -> float | None:
    """The ``time.monotonic()`` after which this job hands what is left to a new job."""
    if job is None or not job.timeout or job.timeout < 0 or not get_queue(conf).is_async:
        return None
    return time.monotonic() + hand_over_after(float(job.timeout), conf.http_timeout)


def _hand_over(
    report: DeliveryReport,
    batch_id: str,
    attempt: int,
    force: bool,
    conf: IndexNowSettings,
    transport: Transport,
) -> list[str]:
    """Put what the delivery had no time to send in new ones, one per engine; their ids."""
    by_engine: dict[str, list[str]] = {}
    for engine, urls in report.left:
        by_engine.setdefault(engine.endpoint, []).extend(urls)
    job_ids: list[str] = []
    for endpoint, urls in by_engine.items():
        job_id = transport.send_later(
            urls,
            gone=[url for url in urls if url in report.gone],
            batch_id=batch_id,
            attempt=attempt,
            engines=[endpoint],
            force=force,
            delay=0,
        )
        logger.info(
            "IndexNow handed over batch=%s count=%d job=%s: the job is near its timeout "
            "(QUEUE['TIMEOUT'] %ss)",
            batch_id,
            len(urls),
            job_id,
            conf.queue_timeout,
        )
        job_ids.append(job_id)
    return job_ids


def deliver_window(window: int) -> dict[str, Any]:
    """The job of one window of coalesced delivery: every pending URL into one delivery job.

    See :mod:`indexnow_django.transports.rq.coalesce`. The delivery job goes to the front of
    the queue, so it runs next.
    """
    from rq import get_current_job

    from .transports.rq.coalesce import take_pending

    conf = get_settings()
    queue = get_queue(conf)
    job = get_current_job()
    with _alive_while_sending(job, conf):
        delivery, count = take_pending(queue, conf)
    if delivery is None:
        return {"window": window, "count": 0}
    logger.info(
        "IndexNow window=%s count=%d batch=%s job=%s: the URLs flushed in the window, "
        "in one delivery",
        window,
        count,
        delivery.meta.get(META_BATCH_ID),
        delivery.id,
    )
    return {"window": window, "count": count, "job": delivery.id}


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

    Run by the worker class every few seconds (see :mod:`indexnow_django.worker`).
    An orphan counts as an attempt: it is sent again as a new job, with the
    same URLs, engines and batch id and the next attempt number, and removed
    from rq. At ``MAX_ATTEMPTS`` it goes to the failed job registry instead,
    with a message naming the count (requeued from there, it starts over).
    """
    conf = get_settings()
    resent: list[str] = []
    for job in orphaned_jobs(queue):
        if job.func_name == WINDOW_FUNC:  # its URLs are still pending: a new window job
            from .transports.rq.coalesce import ensure_window_job

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
        batch_id = str(job.meta.get(META_BATCH_ID) or job.kwargs.get("batch_id") or "-")
        attempt = int(job.meta.get(META_ATTEMPT) or job.kwargs.get("attempt") or 1)
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
        successor = enqueue_delivery(
            queue,
            job.args[0],
            gone=job.kwargs.get("gone") or (),
            batch_id=batch_id,
            attempt=attempt + 1,
            engines=job.kwargs.get("engines"),
            force=bool(job.kwargs.get("force", False)),
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
    from .protocol.normalize import host_of

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


def _retry(
    report: DeliveryReport,
    batch_id: str,
    attempt: int,
    force: bool,
    conf: IndexNowSettings,
    transport: Transport,
) -> tuple[list[str], list[PostResult]]:
    """Send one new delivery per engine later; return their ids and the results not retried."""
    results = report.retryable
    if attempt >= conf.retry.max_attempts:
        return [], results
    refusal = transport.cannot_defer()
    if refusal is not None:
        logger.warning("IndexNow not retried batch=%s attempt=%d: %s", batch_id, attempt, refusal)
        return [], results
    job_ids: list[str] = []
    for retry in conf.retry.plan(results, attempt):
        job_id = transport.send_later(
            retry.urls,
            gone=[url for url in retry.urls if url in report.gone],
            batch_id=batch_id,
            attempt=retry.attempt,
            engines=[retry.engine.endpoint],
            force=force,
            delay=retry.delay,
        )
        first = retry.results[0]
        logger.warning(
            "IndexNow retry batch=%s engine=%s count=%d status=%s attempt=%d/%d in=%.1fs job=%s%s",
            batch_id,
            retry.engine.name,
            len(retry.urls),
            first.status if first.status is not None else "-",
            retry.attempt,
            conf.retry.max_attempts,
            retry.delay,
            job_id,
            " error=" + first.error if first.error else "",
        )
        job_ids.append(job_id)
    return job_ids, []


def _describe(result: PostResult) -> str:
    plural = "" if len(result.urls) == 1 else "s"
    return f"{len(result.urls)} URL{plural} for {result.host}: {result.message}"


def _rejected(
    rejected: list[PostResult],
    exhausted: list[PostResult],
    batch_id: str,
    attempt: int,
    conf: IndexNowSettings,
) -> SubmissionRejected:
    message = f"IndexNow batch {batch_id} was rejected"
    if exhausted:
        message += f" (attempt {attempt} of {conf.retry.max_attempts})"
    hints = dict.fromkeys(rejection_hint(r.status, r.host, conf) for r in rejected)
    if len(hints) > 1:  # a hint that names a key file says the general one too
        hints.pop(rejection_hint(None, "", conf), None)
    for result in rejected:
        logger.error(
            "IndexNow rejected batch=%s engine=%s host=%s count=%d status=%s: %s",
            batch_id,
            result.engine.name,
            result.host,
            len(result.urls),
            result.status,
            result.message,
        )
    return SubmissionRejected(message, results=[*rejected, *exhausted], hint=" ".join(hints))


def _exhausted(
    exhausted: list[PostResult],
    batch_id: str,
    attempt: int,
    conf: IndexNowSettings,
    transport: Transport,
) -> RetriesExhausted:
    maximum = conf.retry.max_attempts
    if attempt >= maximum:
        why = f"gave up after {attempt} attempts (RETRY['MAX_ATTEMPTS'] is {maximum})"
    else:
        why = f"not retried after attempt {attempt} of {maximum}: {transport.cannot_defer()}"
    details = "; ".join(_describe(r) for r in exhausted)
    logger.error("IndexNow failed batch=%s attempt=%d/%d: %s", batch_id, attempt, maximum, why)
    return RetriesExhausted(
        f"IndexNow batch {batch_id} {why}: {details}. {transport.again}",
        attempts=attempt,
    )


def rejection_hint(status: int | None, host: str, conf: IndexNowSettings) -> str:
    """What to do about a final rejection: check the setup, and for 403 the key file."""
    hint = "Run manage.py indexnow_check to check the settings and the key file"
    host_conf = conf.host_config(host)
    if status == 403 and host_conf is not None:
        hint += f" (the engine fetches the key from {host_conf.masked_key_file_url})"
    return hint + "."
