"""A parcel sent by the process that flushed it: after the response when there is one.

What ``DISPATCH: "sync"`` does with every flush, and what the other transports
fall back to when they cannot take one. No retries here: what is not accepted
is logged, and, for a fallback, what may be accepted later is kept in the
database for a worker (:mod:`indexnow_django.sending.pending`).
"""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from .. import compat, signals
from ..conf import IndexNowSettings
from .parcel import Parcel
from .pending import keep
from .run import rejection_hint
from .send import DeliveryReport, deliver_now

if TYPE_CHECKING:
    from django.http.response import HttpResponseBase

logger = logging.getLogger(__name__)

__all__ = ["after_response", "log_report", "send_in_process"]


def after_response(response: HttpResponseBase | None) -> bool:
    """Whether work handed over with ``response`` runs once it has gone out."""
    return response is not None and compat.can_run_after_response(response)


def send_in_process(
    parcel: Parcel,
    conf: IndexNowSettings,
    response: HttpResponseBase | None = None,
    *,
    fallback: bool = False,
) -> None:
    """Send ``parcel`` now, or after ``response`` has gone out when there is one. Never raises.

    ``fallback``: the transport could not take it; what may still be accepted
    later is kept in the database for a worker.
    """

    def send() -> None:
        try:
            report = deliver_now(
                parcel.urls,
                gone=parcel.gone,
                force=parcel.force,
                batch_id=parcel.batch_id,
                conf=conf,
                normalized=True,
            )
        except Exception as exc:
            logger.exception("IndexNow send failed batch=%s count=%d", parcel.batch_id, len(parcel))
            if fallback:
                keep(parcel, reason=f"the send failed: {type(exc).__name__}: {exc}")
            return
        log_report(report, batch_id=parcel.batch_id, conf=conf, kept=fallback)
        if fallback:
            _keep_retryable(parcel, report)

    if response is None or not compat.run_after_response(response, send):
        send()


def _keep_retryable(parcel: Parcel, report: DeliveryReport) -> None:
    """Keep the URLs each engine may still accept later, one row per engine."""
    by_engine: dict[str, dict[str, None]] = {}
    reasons: dict[str, str] = {}
    for result in report.retryable:
        by_engine.setdefault(result.engine.endpoint, {}).update(dict.fromkeys(result.urls))
        status = result.status if result.status is not None else "-"
        reasons[result.engine.endpoint] = f"{result.engine.name} answered {status}"
    for endpoint, urls in by_engine.items():
        keep(parcel.part(list(urls), engines=[endpoint]), reason=reasons[endpoint])


def log_report(
    report: DeliveryReport, *, batch_id: str, conf: IndexNowSettings, kept: bool = False
) -> None:
    """Log each POST that an in-process send could not get accepted.

    ``kept``: what may be accepted later is kept for a worker, else it is not retried.
    """
    if not kept and report.retryable:
        signals.given_up(report.retryable, attempt=1, batch_id=batch_id)
    for result in report.results:
        if result.accepted:
            continue
        if result.retryable:
            advice = (
                "kept for a worker"
                if kept
                else "not retried (sent from this process, without a queue)"
            )
        else:
            advice = rejection_hint(result.status, result.host, conf)
        logger.warning(
            "IndexNow not accepted batch=%s engine=%s host=%s count=%d status=%s: %s. %s",
            batch_id,
            result.engine.name,
            result.host,
            len(result.urls),
            result.status if result.status is not None else "-",
            result.message,
            advice,
        )
