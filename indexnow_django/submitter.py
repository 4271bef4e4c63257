"""Send URLs to the engines now: debounce, group by host, split, POST.

This is what a worker's job, the synchronous dispatch and
``indexnow_submit --sync`` all call. It does no retrying itself: the
:class:`DeliveryReport` says which URLs and engines want another attempt,
and the caller (``jobs.py``) schedules it.
"""

from __future__ import annotations

import logging
from collections import defaultdict
from collections.abc import Iterable, Iterator, Sequence
from dataclasses import dataclass, field

from .client import Engine, IndexNowClient, Outcome, PostResult
from .conf import IndexNowSettings, get_settings
from .debounce import DebounceStore
from .history import record
from .normalize import host_of, normalize_urls

logger = logging.getLogger(__name__)

__all__ = ["DeliveryReport", "chunked", "clean_urls", "deliver_now", "make_client", "make_debounce"]


def chunked(items: Iterable[str], size: int) -> Iterator[list[str]]:
    """Yield lists of at most ``size`` items, consuming ``items`` lazily."""
    chunk: list[str] = []
    for item in items:
        chunk.append(item)
        if len(chunk) >= size:
            yield chunk
            chunk = []
    if chunk:
        yield chunk


@dataclass
class DeliveryReport:
    """What one delivery did, per POST."""

    results: list[PostResult] = field(default_factory=list)
    #: URL count left out per engine name because it was accepted within the TTL.
    debounced: dict[str, int] = field(default_factory=dict)
    #: ``(url, reason)`` for URLs dropped before sending (foreign host, invalid).
    dropped: list[tuple[str, str]] = field(default_factory=list)

    @property
    def accepted(self) -> list[PostResult]:
        return [r for r in self.results if r.outcome is Outcome.ACCEPTED]

    @property
    def retryable(self) -> list[PostResult]:
        return [r for r in self.results if r.outcome is Outcome.RETRY]

    @property
    def rejected(self) -> list[PostResult]:
        return [r for r in self.results if r.outcome is Outcome.REJECTED]

    @property
    def sent_count(self) -> int:
        return sum(len(r.urls) for r in self.accepted)

    @property
    def debounced_count(self) -> int:
        return sum(self.debounced.values())

    def merge(self, other: DeliveryReport) -> None:
        self.results.extend(other.results)
        for name, count in other.debounced.items():
            self.debounced[name] = self.debounced.get(name, 0) + count
        self.dropped.extend(other.dropped)


def clean_urls(
    urls: Iterable[str], conf: IndexNowSettings
) -> tuple[list[str], list[tuple[str, str]]]:
    """Normalize ``urls`` against the settings; warn once about the dropped ones."""
    result = normalize_urls(urls, conf.base_url, conf.hosts)
    if result.rejected:
        shown = ", ".join(f"{url!r} ({reason})" for url, reason in result.rejected[:10])
        more = len(result.rejected) - 10
        logger.warning(
            "IndexNow dropped %d URL(s): %s%s",
            len(result.rejected),
            shown,
            f" and {more} more" if more > 0 else "",
        )
    return result.valid, result.rejected


def make_client(conf: IndexNowSettings) -> IndexNowClient:
    return IndexNowClient(timeout=conf.http_timeout, dry_run=conf.dry_run)


def make_debounce(conf: IndexNowSettings) -> DebounceStore:
    return DebounceStore(
        conf.debounce_cache, conf.debounce_ttl, claim_ttl=int(conf.http_timeout * 2) + 30
    )


def deliver_now(
    urls: Iterable[str],
    *,
    engines: Sequence[str] | None = None,
    force: bool = False,
    batch_id: str = "-",
    conf: IndexNowSettings | None = None,
    client: IndexNowClient | None = None,
) -> DeliveryReport:
    """POST ``urls`` to the engines (all configured, or those named in ``engines``).

    ``urls`` may be relative; they are normalized and foreign hosts dropped.
    Never raises for an engine's answer; see :class:`DeliveryReport`.
    """
    conf = conf or get_settings()
    report = DeliveryReport()
    if not conf.enabled:
        return report
    valid, report.dropped = clean_urls(urls, conf)
    if not valid:
        return report
    client = client or make_client(conf)
    store = make_debounce(conf)
    selected: tuple[Engine, ...] = conf.engines
    if engines is not None:
        wanted = set(engines)
        selected = tuple(e for e in conf.engines if e.name in wanted or e.endpoint in wanted)
    by_host: dict[str, list[str]] = defaultdict(list)
    for url in valid:
        by_host[host_of(url)].append(url)
    for host, host_urls in by_host.items():
        host_conf = conf.hosts[host]
        for batch in chunked(host_urls, conf.max_urls):
            for engine in selected:
                fresh = store.claim(engine.name, batch, force=force)
                skipped = len(batch) - len(fresh)
                if skipped:
                    report.debounced[engine.name] = report.debounced.get(engine.name, 0) + skipped
                if not fresh:
                    continue
                result = client.post(engine, host, host_conf.key, fresh, host_conf.key_location)
                record(result, batch_id=batch_id, conf=conf)
                logger.info(
                    "IndexNow POST batch=%s engine=%s host=%s count=%d status=%s outcome=%s",
                    batch_id,
                    engine.name,
                    host,
                    len(fresh),
                    result.status if result.status is not None else "-",
                    result.outcome.value,
                )
                if result.accepted and not conf.dry_run:
                    store.record(engine.name, fresh)
                else:
                    store.release(engine.name, fresh)
                report.results.append(result)
    return report
