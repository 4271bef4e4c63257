"""The debounce store: which URLs an engine accepted recently.

Kept in a Django cache (``DEBOUNCE["CACHE"]``) under hashed keys, one per
engine and URL, so every look-up is one ``get_many``/``set_many`` round trip
per batch, never one per URL.

Before a batch is posted its URLs are *claimed*: marked as in flight for a
short while. With Django's Redis cache (or django-redis) the claim is one
server-side script per batch doing a ``SET NX`` per URL (atomic per URL), so
two workers holding the same URL never both post it. Other backends fall back
to ``get_many`` + ``set_many``, which narrows the race between processes but does not close it
(``indexnow_check`` and a system check warn when the cache cannot be shared
with the workers at all).

The store never stops a send: when the cache cannot be reached (often the
same Redis as the queue, down), every URL is sent as if nothing had been
sent before, and a warning says so.
"""

from __future__ import annotations

import hashlib
import logging
from collections.abc import Sequence

from django.core.cache import BaseCache, caches

from .compat import redis_cache_client

logger = logging.getLogger(__name__)

__all__ = ["DebounceStore"]

PENDING = 1
SENT = 2
KEY_PREFIX = "indexnow:debounce:"

# One command per batch however many URLs it holds: packing thousands of
# pipelined commands costs far more than one script call with their keys.
_CLAIM_SCRIPT = """
local won = {}
for i, key in ipairs(KEYS) do
    won[i] = redis.call('SET', key, ARGV[1], 'NX', 'EX', ARGV[2]) and 1 or 0
end
return won
"""
_RECORD_SCRIPT = """
for _, key in ipairs(KEYS) do
    redis.call('SET', key, ARGV[1], 'EX', ARGV[2])
end
return #KEYS
"""


class DebounceStore:
    """Claims, records and releases URLs per engine."""

    def __init__(self, cache_alias: str, ttl: int, claim_ttl: int = 120) -> None:
        self.cache_alias = cache_alias
        self.ttl = ttl
        self.claim_ttl = max(1, claim_ttl)

    @property
    def enabled(self) -> bool:
        return self.ttl > 0

    @property
    def cache(self) -> BaseCache:
        return caches[self.cache_alias]

    def _key(self, engine: str, url: str) -> str:
        digest = hashlib.sha256(f"{engine}\n{url}".encode()).hexdigest()[:40]
        return f"{KEY_PREFIX}{digest}"

    def claim(self, engine: str, urls: Sequence[str], *, force: bool = False) -> list[str]:
        """Mark ``urls`` in flight for ``engine``; return those this caller may send.

        A URL accepted within the TTL, or claimed by another sender right now,
        is left out. ``force`` claims every URL regardless. When the cache
        cannot be reached every URL may be sent.
        """
        if not self.enabled or not urls:
            return list(urls)
        try:
            return self._claim(engine, urls, force=force)
        except Exception as exc:
            self._unavailable("claim", engine, len(urls), exc)
            return list(urls)

    def _unavailable(self, action: str, engine: str, count: int, exc: Exception) -> None:
        logger.warning(
            "IndexNow debounce cache %r unavailable (%s: %s): %s skipped for engine=%s count=%d",
            self.cache_alias,
            type(exc).__name__,
            exc,
            action,
            engine,
            count,
        )

    def _claim(self, engine: str, urls: Sequence[str], *, force: bool) -> list[str]:
        keys = {self._key(engine, url): url for url in urls}
        cache = self.cache
        if force:
            cache.set_many(dict.fromkeys(keys, PENDING), timeout=self.claim_ttl)
            return list(urls)
        target = redis_cache_client(cache)
        if target is not None:
            client, make_key = target
            won = client.eval(
                _CLAIM_SCRIPT, len(keys), *map(make_key, keys), PENDING, self.claim_ttl
            )
            return [url for url, ok in zip(keys.values(), won, strict=True) if ok]
        present = cache.get_many(list(keys))
        free = {key: url for key, url in keys.items() if key not in present}
        if free:
            cache.set_many(dict.fromkeys(free, PENDING), timeout=self.claim_ttl)
        return list(free.values())

    def filter_new(self, engine: str, urls: Sequence[str]) -> list[str]:
        """The URLs of ``urls`` not accepted (nor claimed) for ``engine`` now. Read only."""
        if not self.enabled or not urls:
            return list(urls)
        keys = {self._key(engine, url): url for url in urls}
        present = self.cache.get_many(list(keys))
        return [url for key, url in keys.items() if key not in present]

    def record(self, engine: str, urls: Sequence[str]) -> None:
        """``engine`` accepted ``urls``: do not send them to it again within the TTL."""
        if self.enabled and urls:
            try:
                keys = [self._key(engine, url) for url in urls]
                target = redis_cache_client(self.cache)
                if target is not None:
                    client, make_key = target
                    client.eval(_RECORD_SCRIPT, len(keys), *map(make_key, keys), SENT, self.ttl)
                else:
                    self.cache.set_many(dict.fromkeys(keys, SENT), timeout=self.ttl)
            except Exception as exc:
                self._unavailable("record", engine, len(urls), exc)

    def release(self, engine: str, urls: Sequence[str]) -> None:
        """Drop the claims on ``urls`` (not accepted): a later attempt may send them."""
        if self.enabled and urls:
            try:
                self.cache.delete_many([self._key(engine, url) for url in urls])
            except Exception as exc:
                self._unavailable("release", engine, len(urls), exc)
