"""Is it really the crawler? Verified off the request path, by the worker.

A sighting's address is believed for a crawler when it lies in one of the crawler's ranges
(the published ones shipped in :data:`~.crawlers.PUBLISHED_RANGES`, and
``CRAWL["RANGES"]``), or when its reverse DNS name is in one of the crawler's domains and
the forward DNS of that name gives the address back. The DNS answer for an address (the
forward-confirmed name, or none) is kept in the debounce cache for a day
(:data:`DNS_TTL`): at most one reverse and one forward look-up per address per day,
whatever the number of fetches.

The look-ups go through a resolver: :class:`SystemResolver` (the operating system's, as
``socket`` asks it), or the class ``CRAWL["RESOLVER"]`` names, so that tests (and a site
with its own DNS library) decide the answers.
"""

from __future__ import annotations

import ipaddress
import logging
import socket
from collections.abc import Mapping
from typing import Any, Protocol

from ..conf import IndexNowSettings
from .crawlers import CRAWLERS, Network, networks

logger = logging.getLogger(__name__)

__all__ = ["DNS_TTL", "Resolver", "SystemResolver", "Verifier", "resolver_for"]

#: Seconds a DNS answer for an address is kept.
DNS_TTL = 24 * 3600
#: What the cache holds for an address whose reverse DNS gave no confirmed name.
_NO_NAME = "-"


class Resolver(Protocol):
    """Reverse and forward DNS."""

    def reverse(self, address: str) -> str | None:
        """The name the address's PTR record gives, or ``None``."""

    def forward(self, name: str) -> list[str]:
        """The addresses ``name`` resolves to (IPv4 and IPv6)."""


class SystemResolver:
    """The operating system's resolver (blocking calls: for the worker only)."""

    def reverse(self, address: str) -> str | None:
        try:
            return socket.gethostbyaddr(address)[0]
        except (OSError, UnicodeError):
            return None

    def forward(self, name: str) -> list[str]:
        try:
            answers = socket.getaddrinfo(name, None, proto=socket.IPPROTO_TCP)
        except (OSError, UnicodeError):
            return []
        return [str(answer[4][0]) for answer in answers]


def resolver_for(conf: IndexNowSettings) -> Resolver:
    """The resolver ``CRAWL["RESOLVER"]`` names, or the system's."""
    if conf.crawl_resolver is None:
        return SystemResolver()
    from django.utils.module_loading import import_string

    found: Resolver = import_string(conf.crawl_resolver)()
    return found


class Verifier:
    """Verifies sightings for one drain; DNS answers kept in ``cache`` (a Django cache)."""

    def __init__(self, conf: IndexNowSettings, resolver: Resolver, cache: Any) -> None:
        self.resolver = resolver
        self.cache = cache
        self.ranges: Mapping[str, tuple[Network, ...]] = networks(conf.crawl_ranges)
        self._names: dict[str, str | None] = {}

    def verified(self, address: str, crawler: str) -> bool:
        """Whether ``address`` is ``crawler``'s. Never raises."""
        try:
            ip = ipaddress.ip_address(address)
        except ValueError:
            return False
        if any(ip in network for network in self.ranges.get(crawler, ())):
            return True
        name = self.confirmed_name(str(ip))
        return name is not None and CRAWLERS[crawler].owns_name(name)

    def confirmed_name(self, address: str) -> str | None:
        """The forward-confirmed reverse DNS name of ``address``, or ``None`` (cached)."""
        if address in self._names:
            return self._names[address]
        key = f"indexnow:crawl:dns:{address}"
        try:
            cached = self.cache.get(key)
        except Exception:
            cached = None
        if cached is None:
            name = self._look_up(address)
            try:
                self.cache.set(key, name or _NO_NAME, DNS_TTL)
            except Exception:
                logger.warning("IndexNow crawl: DNS answer not cached address=%s", address)
        else:
            name = None if cached == _NO_NAME else str(cached)
        self._names[address] = name
        return name

    def _look_up(self, address: str) -> str | None:
        try:
            name = self.resolver.reverse(address)
            if not name:
                return None
            wanted = ipaddress.ip_address(address)
            for answer in self.resolver.forward(name):
                try:
                    if ipaddress.ip_address(answer.split("%", 1)[0]) == wanted:
                        return name.rstrip(".").lower()
                except ValueError:
                    continue
        except Exception:
            logger.warning("IndexNow crawl: DNS look-up failed address=%s", address, exc_info=True)
        return None
