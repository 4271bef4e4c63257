"""The run of one parcel, whatever carries it: send it, then act on what the engines answered.

:func:`run_parcel` is what an rq job and a ``django.tasks`` task run (see
:mod:`indexnow_django.transports`). It sends through
:func:`~indexnow_django.sending.send.deliver_now` (debounce, group by host,
split, one POST per batch and engine) and then, from each answer:

* accepted: recorded in the debounce store (by the sender);
* retryable (429, 5xx, timeout, network error, ``SiteVerificationNotCompleted``):
  a *new* delivery per engine, for exactly the URLs that engine did not take,
  in ``conf.retry.delay(...)`` seconds, with the same batch id and
  ``attempt + 1``. At ``MAX_ATTEMPTS`` it fails with
  :class:`~indexnow_django.exceptions.RetriesExhausted`;
* final rejection (400, 403, 422, other 4xx): it fails at once with
  :class:`~indexnow_django.exceptions.SubmissionRejected`, with the engine's
  answer and a hint.

What the throttle holds back and what a delivery near its deadline had no time
to start are given back to the carrier too (:meth:`Carrier.put_back`), at the
same attempt: a carrier with an outbox merges them with what else waits for
the same engine. The carrier is all this module knows of the transport: it imports no
queue and no task framework.
"""

from __future__ import annotations

import logging
from typing import Any, ClassVar, Protocol

from .. import signals
from ..conf import IndexNowSettings
from ..exceptions import RetriesExhausted, SubmissionRejected
from ..protocol.client import PostResult
from .parcel import Parcel
from .send import DeliveryReport, deliver_now

logger = logging.getLogger(__name__)

__all__ = ["Carrier", "hand_over_after", "rejection_hint", "run_parcel"]


class Carrier(Protocol):
    """What :func:`run_parcel` needs of the transport that runs it."""

    #: What a failure message tells the user to do to send again.
    again: ClassVar[str]

    def cannot_defer(self) -> str | None:
        """Why a delivery cannot be put off here (a retry, a held POST), or ``None``."""

    def send_later(self, parcel: Parcel, delay: float) -> str:
        """Carry ``parcel`` again in ``delay`` seconds (0: now); the new job's or task's id."""

    def put_back(self, parcel: Parcel, delay: float) -> str:
        """Like :meth:`send_later`, for URLs that were not tried (held back by the
        throttle, left before a deadline): a carrier with an outbox merges them there with
        whatever else waits for the same engine."""

    def near_deadline(self) -> str:
        """Why a delivery past its ``deadline`` hands what is left over, for the log."""


def run_parcel(
    parcel: Parcel,
    *,
    conf: IndexNowSettings,
    carrier: Carrier,
    wait: bool = False,
    deadline: float | None = None,
) -> dict[str, Any]:
    """Send ``parcel``, then act on the answers (see the module); the summary a job keeps.

    ``wait``: sleep for the throttle rather than give held POSTs back to the carrier
    (a call by hand, or a carrier that cannot defer). ``deadline`` (a
    ``time.monotonic()``): no POST starts after it; what is left is given back at once.
    """
    report = deliver_now(
        parcel.urls,
        gone=parcel.gone,
        engines=parcel.engines,
        force=parcel.force,
        batch_id=parcel.batch_id,
        conf=conf,
        attempt=parcel.attempt,
        wait=wait or carrier.cannot_defer() is not None,
        slot=parcel.slot,
        deadline=deadline,
    )
    deferred = _give_back(parcel, report, carrier, conf)
    if parcel.engines is not None and not report.results and not report.debounced and not deferred:
        configured = {e.endpoint for e in conf.engines} | {e.name for e in conf.engines}
        dropped = [engine for engine in parcel.engines if engine not in configured]
        if dropped:
            logger.warning(
                "IndexNow retry dropped batch=%s attempt=%d: engine(s) %s no longer in "
                "INDEXNOW['ENGINES']",
                parcel.batch_id,
                parcel.attempt,
                ", ".join(dropped),
            )

    retry_jobs: list[str] = []
    exhausted: list[PostResult] = []
    if report.retryable:
        retry_jobs, exhausted = _retry(parcel, report, carrier, conf)
    if exhausted:
        signals.given_up(exhausted, attempt=parcel.attempt, batch_id=parcel.batch_id)
    if report.rejected:
        raise _rejected(parcel, report.rejected, exhausted, conf)
    if exhausted:
        raise _exhausted(parcel, exhausted, carrier, conf)
    summary: dict[str, Any] = {
        "batch_id": parcel.batch_id,
        "attempt": parcel.attempt,
        "accepted": report.sent_count,
        "debounced": report.debounced_count,
        "retry_jobs": retry_jobs,
    }
    summary.update(deferred)
    return summary


def _give_back(
    parcel: Parcel, report: DeliveryReport, carrier: Carrier, conf: IndexNowSettings
) -> dict[str, list[str]]:
    """Give the carrier what the throttle held back (due at its slot) and what the deadline
    left (at once), one later delivery per engine, at the same attempt: being held back is
    no attempt. Returns their ids under ``deferred_jobs`` and ``handed_over``."""
    given: dict[str, list[str]] = {}
    for held in report.deferred:
        later = parcel.part(held.urls, engines=[held.engine.endpoint], slot=held.slot)
        job_id = carrier.put_back(later, held.delay)
        logger.info(
            "IndexNow throttled batch=%s engine=%s count=%d in=%.1fs job=%s "
            "(THROTTLE['MAX_REQUESTS_PER_MINUTE'] is %s)",
            parcel.batch_id,
            held.engine.name,
            len(held.urls),
            held.delay,
            job_id,
            conf.throttle_per_minute,
        )
        given.setdefault("deferred_jobs", []).append(job_id)
    left: dict[str, list[str]] = {}
    for engine, urls in report.left:
        left.setdefault(engine.endpoint, []).extend(urls)
    for endpoint, urls in left.items():
        job_id = carrier.put_back(parcel.part(urls, engines=[endpoint]), 0)
        logger.info(
            "IndexNow handed over batch=%s count=%d job=%s: %s",
            parcel.batch_id,
            len(urls),
            job_id,
            carrier.near_deadline(),
        )
        given.setdefault("handed_over", []).append(job_id)
    return given


def hand_over_after(timeout: float, http_timeout: float) -> float:
    """Seconds into a job of ``timeout`` seconds after which it starts no POST.

    Its last POSTs may take ``http_timeout`` more: that fits, with a second to
    spare, while at least a fifth of the timeout is used for sending.
    """
    return max(timeout * 0.2, min(timeout * 0.6, timeout - http_timeout - 1))


def _retry(
    parcel: Parcel, report: DeliveryReport, carrier: Carrier, conf: IndexNowSettings
) -> tuple[list[str], list[PostResult]]:
    """Send one new delivery per engine later; return their ids and the results not retried."""
    results = report.retryable
    if parcel.attempt >= conf.retry.max_attempts:
        return [], results
    refusal = carrier.cannot_defer()
    if refusal is not None:
        logger.warning(
            "IndexNow not retried batch=%s attempt=%d: %s", parcel.batch_id, parcel.attempt, refusal
        )
        return [], results
    job_ids: list[str] = []
    for retry in conf.retry.plan(results, parcel.attempt):
        later = parcel.part(retry.urls, engines=[retry.engine.endpoint], attempt=retry.attempt)
        job_id = carrier.send_later(later, retry.delay)
        first = retry.results[0]
        logger.warning(
            "IndexNow retry batch=%s engine=%s count=%d status=%s attempt=%d/%d in=%.1fs job=%s%s",
            parcel.batch_id,
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
    parcel: Parcel,
    rejected: list[PostResult],
    exhausted: list[PostResult],
    conf: IndexNowSettings,
) -> SubmissionRejected:
    message = f"IndexNow batch {parcel.batch_id} was rejected"
    if exhausted:
        message += f" (attempt {parcel.attempt} of {conf.retry.max_attempts})"
    hints = dict.fromkeys(rejection_hint(r.status, r.host, conf) for r in rejected)
    if len(hints) > 1:  # a hint that names a key file says the general one too
        hints.pop(rejection_hint(None, "", conf), None)
    for result in rejected:
        logger.error(
            "IndexNow rejected batch=%s engine=%s host=%s count=%d status=%s: %s",
            parcel.batch_id,
            result.engine.name,
            result.host,
            len(result.urls),
            result.status,
            result.message,
        )
    return SubmissionRejected(message, results=[*rejected, *exhausted], hint=" ".join(hints))


def _exhausted(
    parcel: Parcel, exhausted: list[PostResult], carrier: Carrier, conf: IndexNowSettings
) -> RetriesExhausted:
    attempt, maximum = parcel.attempt, conf.retry.max_attempts
    if attempt >= maximum:
        why = f"gave up after {attempt} attempts (RETRY['MAX_ATTEMPTS'] is {maximum})"
    else:
        why = f"not retried after attempt {attempt} of {maximum}: {carrier.cannot_defer()}"
    details = "; ".join(_describe(r) for r in exhausted)
    logger.error(
        "IndexNow failed batch=%s attempt=%d/%d: %s", parcel.batch_id, attempt, maximum, why
    )
    return RetriesExhausted(
        f"IndexNow batch {parcel.batch_id} {why}: {details}. {carrier.again}",
        attempts=attempt,
    )


def rejection_hint(status: int | None, host: str, conf: IndexNowSettings) -> str:
    """What to do about a final rejection: check the setup, and for 403 the key file."""
    hint = "Run manage.py indexnow_check to check the settings and the key file"
    host_conf = conf.host_config(host)
    if status == 403 and host_conf is not None:
        hint += f" (the engine fetches the key from {host_conf.masked_key_file_url})"
    return hint + "."
