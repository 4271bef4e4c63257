"""The debounce store on Redis (Django's ``RedisCache`` or django-redis): its layout and claims.

Per engine, all under one prefix built once by the cache's key function:

* time windows as wide as the TTL; a URL's entry lives in the window of its
  claim, in one of 16,384 small hashes (kept in Redis's compact listpack
  encoding), under a 6-byte field (the URL's 8-byte BLAKE2s digest less the
  two bytes that chose the hash) whose value is the claim number;
* per claim, a small hash: claimed or accepted, the side, when it was
  accepted, and who holds it. Recording or releasing a claim is one write
  whatever the number of URLs.

A URL is "sent within the TTL" when its entry in the current or the previous
window belongs to an accepted claim of the same side younger than the TTL. A
claim is one call of a server-side script per batch (``claim.lua``, next to
this module); its keys expire with their window. About 14 bytes of Redis per
URL, beyond a fixed 2.5 MB or so per engine once the 16,384 hashes exist.

The time is the caller's (``now``): Redis's own clock only expires keys.
"""

from __future__ import annotations

import functools
import hashlib
from collections.abc import Collection, Sequence
from importlib.resources import files
from typing import Any

from ...protocol.client import Engine
from .claims import GONE, PUBLIC, Claim, Terms

__all__ = ["EXPIRY_SLACK", "claim_on_redis", "claim_script", "digests", "settle_on_redis"]

#: Windows expire this long after they stop being consulted (clock skew between hosts).
EXPIRY_SLACK = 60
_SIX_BITS = bytes(n % 64 for n in range(256))
_DIGEST_SLICE = 1000


@functools.cache
def claim_script() -> str:
    """The Lua source of the claim (``claim.lua``, a resource of this package)."""
    return files(__package__).joinpath("claim.lua").read_text(encoding="utf-8")


def digests(urls: list[str]) -> bytes:
    """The 8-byte digest of each URL, end to end (inlined: this runs per URL), with the
    second byte of each reduced to the 6 bits that choose the hash (as the script wants)."""
    blake2s = hashlib.blake2s
    # A slice at a time: a list of 10,000 digests would take six times the blob's memory.
    joined = bytearray()
    for start in range(0, len(urls), _DIGEST_SLICE):
        chunk = urls[start : start + _DIGEST_SLICE]
        joined += b"".join([blake2s(url.encode(), digest_size=8).digest() for url in chunk])
    joined[1::8] = joined[1::8].translate(_SIX_BITS)
    return bytes(joined)


def claim_on_redis(
    client: Any,
    prefix: str,
    engine: Engine,
    urls: Sequence[str],
    gone: Collection[str],
    terms: Terms,
) -> Claim:
    """Claim ``urls`` (``gone`` those whose page is gone) in one script call per pass.

    A second pass runs only to take over the claims of holders that ``terms.alive``
    says are dead.
    """
    to_claim: dict[str, list[str]] = {PUBLIC: list(urls), GONE: []}
    if gone:
        to_claim[PUBLIC] = [url for url in urls if url not in gone]
        to_claim[GONE] = [url for url in urls if url in gone]
    result = Claim(engine)
    script = claim_script()
    for attempt in range(2):  # a second pass only to take over the claims of dead holders
        reply = client.eval(
            script,
            0,
            prefix,
            int(terms.now),
            terms.ttl,
            terms.ttl,
            terms.claim_ttl,
            terms.holder,
            terms.mode,
            digests(to_claim[PUBLIC]),
            digests(to_claim[GONE]),
            EXPIRY_SLACK,
        )
        window = int(reply[5])
        held: dict[str, list[str]] = {PUBLIC: [], GONE: []}
        for side, token, answer in ((PUBLIC, reply[0], reply[2]), (GONE, reply[1], reply[3])):
            if token:
                result.handles.append((_text(token), side, window))
            verdicts = _text(answer)
            if len(verdicts) != len(to_claim[side]):
                raise ValueError("the claim script answered for another number of URLs")
            if verdicts.count("w") == len(verdicts):  # all new (most of a bulk submission)
                result.urls.extend(to_claim[side])
                continue
            for url, verdict in zip(to_claim[side], verdicts, strict=True):
                if verdict == "w":
                    result.urls.append(url)
                elif verdict == "h":
                    held[side].append(url)
                else:
                    result.debounced += 1
        holders = [_text(item) for item in reply[4]]
        pairs = zip(holders[::2], holders[1::2], strict=True)
        dead = [token for token, who in pairs if not terms.alive(who)]
        if attempt or not dead or terms.mode == "peek":
            break
        # The holders of these claims died before settling them: free their URLs.
        client.delete(*(f"{prefix}t:{token}" for token in dead))
        to_claim = held
    result.debounced += len(held[PUBLIC]) + len(held[GONE])
    if gone or attempt:  # keep the caller's order
        allowed = set(result.urls)
        result.urls = [url for url in urls if url in allowed]
    return result


def settle_on_redis(
    client: Any, prefix: str, claim: Claim, *, accepted: bool, now: float, ttl: int
) -> None:
    """Record (accepted) or release ``claim``: one write per claim, in one round trip."""
    pipe = client.pipeline(transaction=False)
    for token, side, window in claim.handles:
        key = f"{prefix}t:{token}"
        if accepted:
            pipe.hset(key, mapping={"s": "a", "g": side, "t": int(now)})
            pipe.expireat(key, (window + 2) * ttl + EXPIRY_SLACK)
        else:
            pipe.delete(key)
    pipe.execute()


def _text(value: Any) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)
