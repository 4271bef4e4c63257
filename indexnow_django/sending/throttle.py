"""The throttle: at most ``THROTTLE["MAX_REQUESTS_PER_MINUTE"]`` POSTs a minute to one engine
for one host (site), shared by every process.

An engine counts requests per site: to it, 200 tenants are 200 sites, so hosts
do not share a budget. Each POST to an engine for a host first takes the next
*slot* of that engine and host: slots are
``60 / MAX_REQUESTS_PER_MINUTE`` seconds apart, on one clock for every web
process, worker and command, so that whoever sends, the engine gets its
requests evenly spaced and never more than the budget in any minute. The slot
says how long to wait: 0 when the engine has been quiet, more when others sent
just before. The sender then either waits (a command, a synchronous send: in
its own process) or, in a worker, gives the POST back to its transport, due at
the slot, so that no worker sleeps (see :mod:`indexnow_django.sending.run`).

On Redis the POSTs sent in the last minute are also counted, at the slot: a
sender that comes to its slot late (a deferred job runs when rq's scheduler,
which looks once a second, finds it due) could otherwise send less than an
interval before the next one, on time; then it waits again, so that no minute
ever holds more than the budget.

The slots live in the debounce cache (``DEBOUNCE["CACHE"]``): on Redis (Django's
``RedisCache``, django-redis) one server-side script call per POST takes a slot
atomically, on the Redis server's clock. Through any other backend each slot is
one ``cache.add`` (atomic wherever ``add`` is), tried slot after slot, on a grid
of the interval: a POST there waits for the next slot to start, up to one
interval, unless the engine was quiet (no POST in the slot before the one under
way): then it takes the slot under way and goes at once. When the
cache cannot be reached the POST goes out unthrottled, and a warning says so:
the throttle protects the engine's patience, never at the cost of a delivery.
Taking a slot and counting a POST go through one path under the Redis breaker
(:func:`~indexnow_django.sending.breaker.guard`): once a call to a frozen Redis timed
out, both skip it for a while instead of each POST waiting for the timeout.
"""

from __future__ import annotations

import hashlib
import logging
import math
import time
import uuid
from collections.abc import Callable
from typing import Any

from django.core.cache import BaseCache, caches

from ..compat import redis_cache_client
from ..protocol.client import Engine
from .breaker import guard

logger = logging.getLogger(__name__)

__all__ = ["Throttle"]

KEY_PREFIX = "indexnow:throttle:"
#: Slots tried at most through the cache API before the POST goes out anyway.
MAX_PROBES = 10_000

# KEYS: none. ARGV: the engine's key, the interval (ms). Takes the engine's next slot:
# now if it is free, else the first free one; returns how many ms from now it starts.
_TAKE_SLOT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local interval = tonumber(ARGV[2])
local free = tonumber(redis.call('GET', ARGV[1]) or '0')
local at = math.max(now, free)
redis.call('SET', ARGV[1], at + interval, 'PX', at + interval - now + 60000)
return at - now
"""

# KEYS: none. ARGV: the engine's log key, the budget, the window (ms), a unique member.
# The POSTs sent in the last window: admits one more (and logs it) when fewer than the
# budget, returning 0; else the ms until the oldest leaves the window.
_ADMIT = """
local t = redis.call('TIME')
local now = tonumber(t[1]) * 1000 + math.floor(tonumber(t[2]) / 1000)
local budget, window = tonumber(ARGV[2]), tonumber(ARGV[3])
redis.call('ZREMRANGEBYSCORE', ARGV[1], '-inf', now - window)
if redis.call('ZCARD', ARGV[1]) < budget then
    redis.call('ZADD', ARGV[1], now, ARGV[4])
    redis.call('PEXPIRE', ARGV[1], window + 1000)
    return 0
end
local oldest = redis.call('ZRANGE', ARGV[1], 0, 0, 'WITHSCORES')
return math.max(1, tonumber(oldest[2]) + window - now + 1)
"""


class Throttle:
    """The slots of each engine; see the module. ``per_minute`` ``None``: no limit."""

    def __init__(self, cache_alias: str, per_minute: int | None) -> None:
        self.cache_alias = cache_alias
        self.per_minute = per_minute
        #: Per engine, the first slot not known to be taken (cache API only).
        self._hint: dict[str, int] = {}

    @property
    def enabled(self) -> bool:
        return self.per_minute is not None

    @property
    def interval(self) -> float:
        """Seconds between two POSTs to one engine."""
        return 60.0 / self.per_minute if self.per_minute else 0.0

    def take(self, engine: Engine, host: str) -> float:
        """Take the next slot of ``engine`` for ``host``; return the seconds until it starts
        (0: now)."""
        interval_ms = round(self.interval * 1000)
        return self._guarded(
            engine,
            host,
            lambda client, make_key, key: client.eval(_TAKE_SLOT, 0, make_key(key), interval_ms),
            self._take_through_cache_api,
        )

    def admit(self, engine: Engine, host: str) -> float:
        """At the POST's slot: 0 when fewer than the budget went out in the last minute
        (the POST is counted), else the seconds until one leaves that minute.

        The slots space POSTs; this keeps the count exact when a sender comes late to
        its slot (a deferred job that rq's scheduler, polling once a second, ran a
        moment after it) and the next one is on time. Redis only: through the cache
        API the slots alone decide.
        """
        budget = self.per_minute
        return self._guarded(
            engine,
            host,
            lambda client, make_key, key: client.eval(
                _ADMIT, 0, make_key(key + ":sent"), budget, 60_000, uuid.uuid4().hex
            ),
            lambda cache, key: 0.0,
        )

    def _guarded(
        self,
        engine: Engine,
        host: str,
        on_redis: Callable[[Any, Callable[[str], str], str], Any],
        through_cache_api: Callable[[BaseCache, str], float],
    ) -> float:
        """The one path of :meth:`take` and :meth:`admit`: ``on_redis(client, make_key,
        key)`` (a script's milliseconds) under the Redis breaker, so that a Redis that timed
        out is skipped for a while by both, else ``through_cache_api(cache, key)``; 0 when
        there is no limit or the cache cannot be reached (the POST goes out unthrottled,
        and a warning says so)."""
        if not self.enabled:
            return 0.0
        key = self._key(engine, host)
        try:
            cache = caches[self.cache_alias]
            target = redis_cache_client(cache)
            if target is None:
                return through_cache_api(cache, key)
            client, make_key = target
            with guard(client):
                waited = on_redis(client, make_key, key)
            return max(0.0, int(waited) / 1000)
        except Exception as exc:
            logger.warning(
                "IndexNow throttle cache %r unavailable (%s: %s): engine=%s host=%s sent "
                "unthrottled",
                self.cache_alias,
                type(exc).__name__,
                exc,
                engine.name,
                host,
            )
            return 0.0

    @staticmethod
    def _key(engine: Engine, host: str) -> str:
        digest = hashlib.blake2s(f"{engine.endpoint}\n{host}".encode(), digest_size=8)
        return KEY_PREFIX + digest.hexdigest()

    def _take_through_cache_api(self, cache: BaseCache, key: str) -> float:
        interval = self.interval
        now = time.time()
        # A quiet engine: nobody sent in the slot before the one under way, so the last
        # POST is an interval behind at least, and this one may take the slot under way
        # and go now (one more look at the cache, rather than a wait of up to an interval).
        current = math.floor(now / interval)
        if (
            self._hint.get(key, 0) <= current
            and cache.get(f"{key}:{current - 1}") is None
            and cache.add(f"{key}:{current}", 1, timeout=61)
            and cache.add(f"{key}:{current + 1}", 1, timeout=61 + math.ceil(interval))
        ):
            self._hint[key] = current + 2
            return 0.0
        # The first slot that starts from now on: a slot under way may have been used
        # at its start, and sending in it would come too soon after.
        slot = max(math.ceil(now / interval), self._hint.get(key, 0))
        # Kept a minute past its start: long enough for every process to see it taken.
        for _ in range(MAX_PROBES):
            start = slot * interval
            if cache.add(f"{key}:{slot}", 1, timeout=max(1, int(start - now + 60))):
                self._hint[key] = slot + 1
                return max(0.0, start - now)
            slot += 1
        return 0.0
