"""The system check of crawl receipts: ``indexnow.W050``, nothing drains the crawlers' fetches."""

from __future__ import annotations

from django.core import checks

from ..conf import IndexNowSettings

__all__ = ["crawl_worker_checks"]


def crawl_worker_checks(conf: IndexNowSettings) -> list[checks.CheckMessage]:
    """``indexnow.W050``: ``CRAWL["ENABLED"]``, but no rq worker of this app will verify and
    record the fetches web processes notice (they wait in Redis, then are dropped)."""
    from ..transports import chosen
    from ..transports.rq import RQTransport
    from ..transports.rq.wiring import WORKER_CLASS_LINE, is_wired

    if not conf.crawl_enabled or not conf.enabled:
        return []
    if not isinstance(chosen(conf), RQTransport):
        why = f"dispatch does not go to rq's queue (DISPATCH is {conf.dispatch!r})"
        hint = (
            f"Crawl receipts are kept in the Redis of QUEUE['NAME'] and recorded by rq's "
            f"worker: put {conf.queue_name!r} in RQ_QUEUES, use DISPATCH 'auto' or 'queue', "
            f"and run the worker with {WORKER_CLASS_LINE}."
        )
    elif not is_wired():
        why = "rq's worker class is not this app's"
        hint = f"Add {WORKER_CLASS_LINE}: its workers record the crawl receipts."
    else:
        return []
    return [
        checks.Warning(
            f"INDEXNOW['CRAWL']['ENABLED'] is True, but {why}: the crawlers' fetches are "
            "never verified nor recorded.",
            hint=hint,
            id="indexnow.W050",
        )
    ]
