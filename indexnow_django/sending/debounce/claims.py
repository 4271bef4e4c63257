"""What the debounce store's layouts share: a claim, the two sides of a URL, the keys' names."""

from __future__ import annotations

import hashlib
from collections.abc import Callable
from dataclasses import dataclass, field

from ...protocol.client import Engine

__all__ = ["GONE", "KEY_PREFIX", "PUBLIC", "Claim", "Terms", "engine_prefix", "url_digest"]

KEY_PREFIX = "indexnow:debounce:"
#: Side of a URL: public (its page is there) or gone (unpublished, deleted).
PUBLIC, GONE = "0", "1"


def url_digest(url: str) -> bytes:
    """The 8-byte digest that stands for ``url`` in the store."""
    return hashlib.blake2s(url.encode(), digest_size=8).digest()


def engine_prefix(engine: Engine) -> str:
    """The start of the name of every key the store keeps for ``engine`` (its endpoint)."""
    return f"{KEY_PREFIX}{hashlib.blake2s(engine.endpoint.encode(), digest_size=5).hexdigest()}:"


@dataclass(frozen=True)
class Terms:
    """How one sender claims URLs, whichever layout keeps them."""

    #: ``claim``, ``force`` (every URL) or ``peek`` (read only).
    mode: str
    #: Who claims (a job, a task, a process): its claims are its own to settle.
    holder: str
    #: The time of the claim (the store's clock).
    now: float
    #: Seconds an accepted URL is not sent to the engine again.
    ttl: int
    #: Seconds a claim is held before another sender may take it over.
    claim_ttl: int
    #: Whether the holder of another claim may still settle it.
    alive: Callable[[str], bool]


@dataclass
class Claim:
    """The URLs of one batch that one sender may post to one engine, and how to settle them."""

    engine: Engine
    #: The URLs this sender may post, in the order given.
    urls: list[str] = field(default_factory=list)
    #: How many URLs were left out (accepted within the TTL, or in flight elsewhere).
    debounced: int = 0
    #: The claims to record or release: ``(claim id, side, window)``.
    handles: list[tuple[str, str, int]] = field(default_factory=list)
