"""The engines' crawlers this package knows: how each names itself in a user agent, and how
a request that claims to be one is verified.

Each :class:`Crawler` has the name the settings, the admin, the report and the signal use
(``bingbot``), the engine it crawls for, the user-agent tokens it sends, the domains its
reverse DNS names end in, and the address ranges its engine publishes (those shipped here
are in :data:`PUBLISHED_RANGES`; ``CRAWL["RANGES"]`` adds more).

Sources (public facts, as published by each engine):

* Bing: reverse DNS names end in ``search.msn.com`` (Bing Webmaster Help, "Verifying
  Bingbot"). Bing publishes its ranges as a JSON file that changes; none are shipped.
* Yandex: ``yandex.ru``, ``yandex.net`` or ``yandex.com`` (Yandex Webmaster help).
* Seznam: ``seznam.cz`` (``fulltextrobot-…seznam.cz``), and the SeznamBot ranges listed
  on napoveda.seznam.cz ("SeznamBot crawler").
* Naver: ``naver.com`` (Yeti's hosts).
* Yep: ``yep.com``, and ``ahrefs.com``, the reverse DNS suffix Yep's YepBot page gives
  (YepBot runs on Ahrefs' crawlers).
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

__all__ = [
    "CRAWLERS",
    "PUBLISHED_RANGES",
    "USER_AGENT_RE",
    "Crawler",
    "crawler_of",
    "networks",
]

Network = ipaddress.IPv4Network | ipaddress.IPv6Network


@dataclass(frozen=True)
class Crawler:
    """One engine's crawler."""

    #: The name the settings (``CRAWL["RANGES"]``), the admin, the report and the signal use.
    name: str
    #: How people call it (``Bingbot``).
    label: str
    #: The name of the engine in ``INDEXNOW["ENGINES"]`` it crawls for.
    engine: str
    #: The user-agent tokens that claim it: the product name and its slash, as the crawler
    #: sends it (``bingbot/2.0``), matched as written.
    tokens: tuple[str, ...]
    #: The domains its forward-confirmed reverse DNS names end in.
    domains: tuple[str, ...]

    def owns_name(self, hostname: str) -> bool:
        """Whether ``hostname`` (a reverse DNS answer) is in one of its domains."""
        name = hostname.rstrip(".").lower()
        return any(name == domain or name.endswith("." + domain) for domain in self.domains)


CRAWLERS: dict[str, Crawler] = {
    crawler.name: crawler
    for crawler in (
        Crawler("bingbot", "Bingbot", "bing", ("bingbot/",), ("search.msn.com",)),
        Crawler(
            "yandexbot",
            "YandexBot",
            "yandex",
            ("YandexBot/", "YandexMobileBot/"),
            ("yandex.ru", "yandex.net", "yandex.com"),
        ),
        Crawler("seznambot", "SeznamBot", "seznam", ("SeznamBot/",), ("seznam.cz",)),
        Crawler("yeti", "Yeti", "naver", ("Yeti/",), ("naver.com",)),
        Crawler("yepbot", "YepBot", "yep", ("YepBot/",), ("yep.com", "ahrefs.com")),
    )
}

#: The ranges the engines publish for their crawlers, as shipped (see the module's sources).
#: An address in one of them is believed without DNS.
PUBLISHED_RANGES: dict[str, tuple[str, ...]] = {
    "bingbot": (),
    "yandexbot": (),
    "seznambot": (
        "77.75.76.0/24",
        "77.75.77.0/24",
        "77.75.78.0/24",
        "77.75.79.0/24",
        "2a02:598:64:8a00::3100:0/123",
        "2a02:598:128:8a00::b00:0/123",
        "2a02:598:96:8a00::1200:120/123",
    ),
    "yeti": (),
    "yepbot": (),
}

_BY_TOKEN = {token: crawler for crawler in CRAWLERS.values() for token in crawler.tokens}

#: The one test a request's user agent gets: an alternation of literal tokens, which
#: ``re`` searches for in well under a microsecond (a case-insensitive search, or one with
#: word boundaries, takes several).
USER_AGENT_RE = re.compile("|".join(re.escape(token) for token in _BY_TOKEN))


def crawler_of(user_agent: str) -> Crawler | None:
    """The crawler ``user_agent`` claims to be, if any (one regular expression search)."""
    match = USER_AGENT_RE.search(user_agent)
    return None if match is None else _BY_TOKEN[match.group(0)]


def networks(extra: Mapping[str, Iterable[str]] | None = None) -> dict[str, tuple[Network, ...]]:
    """Per crawler, the ranges that verify it: the shipped ones and ``extra``
    (``CRAWL["RANGES"]``, already validated)."""
    found: dict[str, tuple[Network, ...]] = {}
    for name in CRAWLERS:
        ranges = [*PUBLISHED_RANGES.get(name, ()), *((extra or {}).get(name, ()))]
        found[name] = tuple(ipaddress.ip_network(text, strict=False) for text in ranges)
    return found
