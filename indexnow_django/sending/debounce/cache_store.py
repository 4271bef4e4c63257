"""The debounce store on any other Django cache: the same rules through the cache API.

One key per URL and engine (its digest) naming the claim that sent it, one key
per claim (claimed or accepted, side, when, who holds it); ``get_many`` and
``set_many`` per batch. Slower and larger than the Redis layout
(:mod:`.redis_store`), and not atomic: claims here narrow the race between
processes without closing it.
"""

from __future__ import annotations

import uuid
from collections.abc import Collection, Sequence
from typing import Any

from django.core.cache import BaseCache

from ...protocol.client import Engine
from .claims import GONE, PUBLIC, Claim, Terms, engine_prefix, url_digest

__all__ = ["claim_through_cache_api", "settle_through_cache_api"]


def claim_through_cache_api(
    cache: BaseCache,
    engine: Engine,
    urls: Sequence[str],
    gone: Collection[str],
    terms: Terms,
) -> Claim:
    """Claim ``urls`` as :func:`.redis_store.claim_on_redis` does, through the cache API."""
    mode, holder, now, ttl, alive = terms.mode, terms.holder, terms.now, terms.ttl, terms.alive
    prefix = engine_prefix(engine)
    keys = {url: f"{prefix}{url_digest(url).hex()}" for url in urls}
    entries = cache.get_many(list(keys.values())) if mode != "force" else {}
    tokens = {f"{prefix}t:{token}" for token in entries.values()}
    states = cache.get_many(list(tokens)) if tokens else {}
    result = Claim(engine)
    living: dict[str, bool] = {}  # holder -> whether it may still settle its claim
    dead_claims: set[str] = set()
    for url, key in keys.items():
        side = GONE if url in gone else PUBLIC
        verdict = "w"
        token = entries.get(key)
        state = states.get(f"{prefix}t:{token}") if token else None
        if state is not None:
            verdict = _judge(state, side, holder, now, ttl)
            who = state[3]
            if verdict == "h" and mode != "peek":
                if who not in living:
                    living[who] = alive(who)
                if not living[who]:
                    dead_claims.add(str(token))
                    verdict = "w"
        if verdict == "w":
            result.urls.append(url)
        else:
            result.debounced += 1
    if mode == "peek" or not result.urls:
        return result
    if dead_claims:
        cache.delete_many([f"{prefix}t:{token}" for token in dead_claims])
    writes: dict[str, Any] = {}
    claims: dict[str, Any] = {}
    for side in (PUBLIC, GONE):
        mine = [url for url in result.urls if (url in gone) == (side == GONE)]
        if not mine:
            continue
        token = uuid.uuid4().hex[:16]
        result.handles.append((token, side, 0))
        claims[f"{prefix}t:{token}"] = ("c", side, 0.0, holder)
        writes.update(dict.fromkeys((keys[url] for url in mine), token))
    cache.set_many(claims, timeout=terms.claim_ttl)
    cache.set_many(writes, timeout=ttl + terms.claim_ttl)
    return result


def settle_through_cache_api(
    cache: BaseCache, claim: Claim, *, accepted: bool, now: float, ttl: int, claim_ttl: int
) -> None:
    """Record (accepted) or release ``claim``."""
    prefix = engine_prefix(claim.engine)
    keys = [f"{prefix}t:{token}" for token, _, _ in claim.handles]
    if not accepted:
        cache.delete_many(keys)
        return
    cache.set_many(
        {key: ("a", side, now, "") for key, (_, side, _) in zip(keys, claim.handles, strict=True)},
        timeout=ttl + claim_ttl,
    )


def _judge(state: tuple[str, str, float, str], side: str, holder: str, now: float, ttl: int) -> str:
    """The script's verdict for one entry: ``w`` (may send), ``d`` (debounced) or ``h`` (held)."""
    status, claimed_side, accepted_at, who = state
    if status == "c":
        if who == holder or claimed_side != side:
            return "w"
        return "h"
    if claimed_side == side and now - accepted_at < ttl:
        return "d"
    return "w"
