"""The debounce store's API: claim, record, release, on whichever cache is configured.

:class:`DebounceStore` works out who claims (:func:`_holder`), whether the
holder of a claim in the way is still alive, and which layout the cache takes:
:mod:`.redis_store` on Django's Redis cache or django-redis,
:mod:`.cache_store` on any other. It never stops a send: when the cache cannot
be reached every URL is sent as if nothing had been sent before, and a warning
says so. A Redis that timed out is skipped for a while (:mod:`indexnow_django.sending.breaker`).
"""

from __future__ import annotations

import logging
import os
import socket
import time
import uuid
from collections.abc import Callable, Collection, Sequence

from django.core.cache import BaseCache, caches

from ...compat import redis_cache_client
from ...protocol.client import Engine
from ..breaker import guard
from ..parcel import current_runner, holder_alive
from .cache_store import claim_through_cache_api, settle_through_cache_api
from .claims import Claim, Terms, engine_prefix
from .redis_store import claim_on_redis, settle_on_redis

logger = logging.getLogger(__name__)

__all__ = ["DebounceStore"]


class DebounceStore:
    """Claims, records and releases URLs per engine endpoint; see
    :mod:`indexnow_django.sending.debounce`.

    ``clock`` gives the time in seconds since the epoch (``time.time`` unless a test
    gives its own): the TTL, the windows and the moment of acceptance follow it.
    """

    def __init__(
        self,
        cache_alias: str,
        ttl: int,
        claim_ttl: int = 120,
        *,
        clock: Callable[[], float] = time.time,
    ) -> None:
        self.cache_alias = cache_alias
        self.ttl = ttl
        self.claim_ttl = max(1, int(claim_ttl))
        self.clock = clock
        #: The cache could not be reached since this store was made.
        self.unreachable = False

    @property
    def enabled(self) -> bool:
        return self.ttl > 0

    @property
    def cache(self) -> BaseCache:
        return caches[self.cache_alias]

    # ------------------------------------------------------------------ public

    def claim(
        self,
        engine: Engine,
        urls: Sequence[str],
        *,
        gone: Collection[str] = (),
        force: bool = False,
    ) -> Claim:
        """Claim ``urls`` for ``engine``: the returned :class:`Claim` lists those to post.

        ``gone`` holds the URLs of ``urls`` whose page is gone (the others are
        public). A URL accepted within the TTL on the same side, or in flight
        for a live sender, is left out; ``force`` claims every URL. When the
        cache cannot be reached every URL may be sent.
        """
        if not self.enabled or not urls:
            return Claim(engine, list(urls))
        try:
            return self._claim(engine, urls, gone, "force" if force else "claim")
        except Exception as exc:
            self._unavailable("claim", engine, len(urls), exc)
            return Claim(engine, list(urls))

    def filter_new(
        self, engine: Engine, urls: Sequence[str], *, gone: Collection[str] = ()
    ) -> list[str]:
        """The URLs of ``urls`` that a claim for ``engine`` would let through now. Read only."""
        if not self.enabled or not urls:
            return list(urls)
        try:
            return self._claim(engine, urls, gone, "peek").urls
        except Exception as exc:
            self._unavailable("look-up", engine, len(urls), exc)
            return list(urls)

    def record(self, claim: Claim) -> None:
        """The engine accepted ``claim.urls``: do not send them to it again within the TTL."""
        self._settle(claim, accepted=True)

    def release(self, claim: Claim) -> None:
        """The engine did not accept ``claim.urls``: a later attempt may send them."""
        self._settle(claim, accepted=False)

    # ------------------------------------------------------------------ layouts

    def _claim(
        self, engine: Engine, urls: Sequence[str], gone: Collection[str], mode: str
    ) -> Claim:
        gone = gone if isinstance(gone, (set, frozenset)) else frozenset(gone)
        cache = self.cache
        target = redis_cache_client(cache)
        terms = Terms(mode, _holder(), self.clock(), self.ttl, self.claim_ttl, self._alive)
        if target is None:
            return claim_through_cache_api(cache, engine, urls, gone, terms)
        client, make_key = target
        with guard(client):
            prefix = make_key(engine_prefix(engine))
            return claim_on_redis(client, prefix, engine, urls, gone, terms)

    def _settle(self, claim: Claim, *, accepted: bool) -> None:
        if not self.enabled or not claim.handles:
            return
        try:
            cache = self.cache
            target = redis_cache_client(cache)
            now = self.clock()
            if target is None:
                settle_through_cache_api(
                    cache, claim, accepted=accepted, now=now, ttl=self.ttl, claim_ttl=self.claim_ttl
                )
                return
            client, make_key = target
            prefix = make_key(engine_prefix(claim.engine))
            with guard(client):
                settle_on_redis(client, prefix, claim, accepted=accepted, now=now, ttl=self.ttl)
        except Exception as exc:
            self._unavailable(
                "record" if accepted else "release", claim.engine, len(claim.urls), exc
            )

    # ------------------------------------------------------------------ holders

    def _alive(self, holder: str) -> bool:
        """Whether the sender ``holder`` may still post (and settle) its claim."""
        kind, _, rest = holder.partition(":")
        try:
            if kind != "proc":
                return holder_alive(kind, rest)
            host, pid, _ = rest.split(":", 2)
            if host != socket.gethostname():
                return True
            os.kill(int(pid), 0)
        except ProcessLookupError:
            return False
        except Exception:  # cannot tell: the claim stands until it expires
            return True
        return True

    def _unavailable(self, action: str, engine: Engine, count: int, exc: Exception) -> None:
        self.unreachable = True
        logger.warning(
            "IndexNow debounce cache %r unavailable (%s: %s): %s skipped for engine=%s count=%d",
            self.cache_alias,
            type(exc).__name__,
            exc,
            action,
            engine.name,
            count,
        )


def _holder() -> str:
    """Who claims: the job or task running the parcel here (a requeued job takes its own
    claims back), else this process, with a fresh suffix (threads of one process never
    share a claim)."""
    runner = current_runner()
    if runner is not None:
        return runner.holder
    return f"proc:{socket.gethostname()}:{os.getpid()}:{uuid.uuid4().hex[:8]}"
