"""The system check of crawl receipts: ``indexnow.W050``, nothing drains the crawlers' fetches."""

from __future__ import annotations

from django.core import checks

from ..conf import IndexNowSettings

__all__ = ["crawl_worker_checks"]


def crawl_worker_checks(conf: IndexNowSettings) -> list[checks.CheckMessage]:
    """``indexnow.W050``: ``CRAWL["ENABLED"]``, but no rq worker of this app will verify and
    record the fetches web processes notice (they wait in Redis, then are dropped)."""
    from ..transports import chosen

    if not conf.crawl_enabled or not conf.enabled:
        return []
    problem = chosen(conf).cannot_record_crawls()
    if problem is None:
        return []
    why, hint = problem
    return [
        checks.Warning(
            f"INDEXNOW['CRAWL']['ENABLED'] is True, but {why}: the crawlers' fetches are "
            "never verified nor recorded.",
            hint=hint,
            id="indexnow.W050",
        )
    ]
