"""Was it crawled, in ``indexnow_report``: per model and engine, over the period, the URLs
the engine accepted, how many a verified crawler fetched after the acceptance and how long
after (p50, p95), and how many it did not.

An accepted URL is one URL of one accepted POST (a flush's URL accepted by an engine) made
while ``CRAWL["ENABLED"]``; it counts as fetched when a crawler's receipt follows the
acceptances of that flush (see :mod:`.receipts`), with the delay of the first crawler to
come.

Cost: two streamed queries, over the period's waits and receipts (each indexed by
``accepted_at``); no URL text of the history is read.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from datetime import datetime
from typing import Any

__all__ = ["CrawlFigures", "crawl_figures"]


@dataclass
class CrawlFigures:
    """One engine's acceptances of one model's URLs, and the crawlers' fetches after them."""

    engine: str
    accepted: int = 0
    fetched: int = 0
    delays: list[float] = field(default_factory=list, repr=False)
    #: URLs fetched after acceptance, per crawler.
    crawlers: Counter[str] = field(default_factory=Counter)

    @property
    def not_fetched(self) -> int:
        return self.accepted - self.fetched

    def as_dict(self, percentile: Callable[[list[float], float], float | None]) -> dict[str, Any]:
        """The figures as ``indexnow_report --json`` gives them (``percentile``: the
        report's, so that its delays and these are read alike)."""

        def seconds(fraction: float) -> float | None:
            value = percentile(self.delays, fraction)
            return None if value is None else round(value, 3)

        return {
            "engine": self.engine,
            "accepted": self.accepted,
            "fetched": self.fetched,
            "p50_seconds": seconds(0.5),
            "p95_seconds": seconds(0.95),
            "not_fetched": self.not_fetched,
            "crawlers": dict(sorted(self.crawlers.items())),
        }


def crawl_figures(
    since: datetime, owners: Mapping[str, str], other: str
) -> dict[str, dict[str, CrawlFigures]]:
    """``{model label: {engine: figures}}`` over the acceptances since ``since``; a URL
    missing from ``owners`` counts under ``other``."""
    from ..models import CrawlReceipt, CrawlWait
    from .crawlers import CRAWLERS

    # The first fetch after each acceptance of a URL (a URL of a flush), and by whom (one bit
    # per crawler: no container per URL for the garbage collector to walk).
    first: dict[tuple[str, str], float] = {}
    crawlers: dict[tuple[str, str], int] = {}
    bits = {name: 1 << number for number, name in enumerate(CRAWLERS)}
    receipts = (
        CrawlReceipt.objects.filter(accepted_at__gte=since)
        .order_by()
        .values_list("url", "batch_id", "crawler", "after")
    )
    for url, batch_id, crawler, after in receipts.iterator(chunk_size=2000):
        key = (url, batch_id)
        if key not in first or after < first[key]:
            first[key] = after
        crawlers[key] = crawlers.get(key, 0) | bits.get(crawler, 0)
    # Each wait is one URL of one accepted POST: an engine accepted it once in its flush.
    table: dict[tuple[str, str], CrawlFigures] = {}
    waits = (
        CrawlWait.objects.filter(accepted_at__gte=since)
        .order_by()
        .values_list("url", "batch_id", "engine")
    )
    for url, batch_id, engine in waits.iterator(chunk_size=2000):
        label = owners.get(url, other)
        figures = table.get((label, engine))
        if figures is None:
            figures = table[(label, engine)] = CrawlFigures(engine)
        figures.accepted += 1
        key = (url, batch_id)
        after = first.get(key)
        if after is not None:
            figures.fetched += 1
            figures.delays.append(after)
            figures.crawlers.update(name for name, bit in bits.items() if crawlers[key] & bit)
    found: dict[str, dict[str, CrawlFigures]] = {}
    for (label, engine), figures in table.items():
        found.setdefault(label, {})[engine] = figures
    return found
