"""What a request costs: a crawler's fetch noticed, and kept for the worker in one Redis write.

:func:`sighting` runs for every request that went through the middleware. With
``CRAWL["ENABLED"]`` off it reads one flag; on, a request whose user agent names no
crawler costs one regular expression search (:data:`~.crawlers.USER_AGENT_RE`) and
nothing else. A request that claims to be a crawler gives a :class:`Sighting`, and
:func:`keep` appends it to a capped Redis stream on the queue's Redis
(:data:`STREAM_KEY`): one ``XADD``, nothing slower. Whether the crawler is who it says,
and whether the URL was accepted before, is the worker's business (:mod:`.receipts`).

Only the address of a request that claims a crawler's user agent is kept, never a
visitor's; a sighting that fails verification is dropped by the worker.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from django.conf import settings as django_settings
from django.http import HttpRequest
from django.http.response import HttpResponseBase

from .crawlers import CRAWLERS, crawler_of

logger = logging.getLogger(__name__)

__all__ = ["MAX_KEPT", "STREAM_KEY", "Sighting", "client_address", "keep", "sighting"]

#: The Redis stream of sightings waiting for a worker, on ``QUEUE["NAME"]``'s Redis.
STREAM_KEY = "indexnow:crawl:sightings"
#: About this many sightings wait at most (older ones are dropped when no worker drains).
MAX_KEPT = 10000


@dataclass(frozen=True)
class Sighting:
    """A request whose user agent names a crawler: what the worker needs to verify it."""

    url: str
    crawler: str
    address: str
    status: int
    at: float

    def fields(self) -> dict[str, str]:
        return {
            "u": self.url,
            "c": self.crawler,
            "a": self.address,
            "s": str(self.status),
            "t": f"{self.at:.3f}",
        }

    @classmethod
    def from_fields(cls, fields: Mapping[Any, Any]) -> Sighting | None:
        def text(name: str) -> str:
            value = fields.get(name, fields.get(name.encode(), b""))
            return value.decode() if isinstance(value, bytes) else str(value)

        try:
            crawler = text("c")
            if crawler not in CRAWLERS:
                return None
            return cls(text("u"), crawler, text("a"), int(text("s")), float(text("t")))
        except ValueError:
            return None


# The flag and header as last read, keyed on the INDEXNOW dict they came from (a new dict,
# from override_settings or a reload, is read again).
_read: tuple[Any, bool, str | None] = (object(), False, None)


def _watching() -> tuple[bool, str | None]:
    """``(CRAWL["ENABLED"] and ENABLED, the META key of CLIENT_IP_HEADER)``, read once per
    ``INDEXNOW`` dict."""
    global _read
    raw = getattr(django_settings, "INDEXNOW", None)
    if raw is not _read[0]:
        crawl = raw.get("CRAWL") if isinstance(raw, Mapping) else None
        on = (
            isinstance(crawl, Mapping)
            and crawl.get("ENABLED") is True
            and raw.get("ENABLED", True) is not False  # type: ignore[union-attr]
        )
        header = crawl.get("CLIENT_IP_HEADER") if isinstance(crawl, Mapping) else None
        meta = "HTTP_" + header.upper().replace("-", "_") if isinstance(header, str) else None
        _read = (raw, on, meta)
    return _read[1], _read[2]


def client_address(request: HttpRequest, meta_key: str | None) -> str:
    """The client's address: the last entry of the configured header (the one your own proxy
    added) when it is set and present, else ``REMOTE_ADDR``."""
    if meta_key is not None:
        value = request.META.get(meta_key, "")
        if value:
            return str(value).rsplit(",", 1)[-1].strip()
    return str(request.META.get("REMOTE_ADDR", ""))


def sighting(request: HttpRequest, response: HttpResponseBase | None) -> Sighting | None:
    """The crawler's fetch this request is, if its user agent names one. Never raises."""
    on, meta_key = _watching()
    if not on:
        return None
    crawler = crawler_of(request.META.get("HTTP_USER_AGENT", ""))
    if crawler is None or response is None:
        return None
    try:
        if request.method not in ("GET", "HEAD"):
            return None
        return Sighting(
            url=request.build_absolute_uri(),
            crawler=crawler.name,
            address=client_address(request, meta_key),
            status=response.status_code,
            at=time.time(),
        )
    except Exception:  # a host Django refuses, say: not a fetch of one of our URLs
        logger.debug("IndexNow crawl: request not noticed", exc_info=True)
        return None


def keep(seen: Sighting) -> None:
    """Append ``seen`` to the stream for the worker: one Redis write. Never raises."""
    try:
        connection = _connection()
        connection.xadd(STREAM_KEY, seen.fields(), maxlen=MAX_KEPT, approximate=True)
    except Exception as exc:
        logger.warning(
            "IndexNow crawl: a %s fetch was not kept (%s: %s)",
            seen.crawler,
            type(exc).__name__,
            exc,
        )


def _connection() -> Any:
    """The Redis of ``QUEUE["NAME"]`` (the one the worker drains)."""
    from ..conf import get_settings
    from ..transports.rq.queue import connection

    return connection(get_settings(resolve_hosts=False).queue_name)
