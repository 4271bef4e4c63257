"""The per-unit-of-work collector (minimal version; extended by change tracking)."""

from __future__ import annotations

import contextlib
import contextvars
import logging
from collections.abc import Iterable, Iterator

logger = logging.getLogger(__name__)

__all__ = ["Collector", "batch", "current", "submit"]


class Collector:
    """URLs gathered during one unit of work, deduplicated, flushed once."""

    def __init__(self) -> None:
        self.urls: dict[str, None] = {}

    def add(self, urls: Iterable[str]) -> None:
        for url in urls:
            self.urls[url] = None

    def flush(self) -> None:
        urls, self.urls = list(self.urls), {}
        if urls:
            from .dispatch import dispatch

            dispatch(urls)


_current: contextvars.ContextVar[Collector | None] = contextvars.ContextVar(
    "indexnow_collector", default=None
)


def current() -> Collector | None:
    return _current.get()


@contextlib.contextmanager
def batch() -> Iterator[Collector]:
    """Collect URLs in the block and flush them once at its end."""
    collector = Collector()
    token = _current.set(collector)
    try:
        yield collector
    finally:
        _current.reset(token)
        collector.flush()


def submit(urls: Iterable[str] | str) -> None:
    """Add ``urls`` to the current unit of work (or send them now outside any)."""
    if isinstance(urls, str):
        urls = [urls]
    collector = current()
    if collector is not None:
        collector.add(urls)
        return
    single = Collector()
    single.add(urls)
    single.flush()
