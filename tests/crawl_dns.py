"""A DNS the crawl receipt tests control: ``CRAWL["RESOLVER"] = "tests.crawl_dns.TableResolver"``
(for the workers they start too). No network."""

from __future__ import annotations

#: A Bingbot address: its PTR names a search.msn.com host that resolves back to it.
BINGBOT = "198.51.100.7"
#: A YandexBot address over IPv6.
YANDEXBOT = "2001:db8::5"
#: An address whose PTR names a host outside every crawler's domain.
SPOOFER = "203.0.113.9"
#: An address whose PTR claims search.msn.com, but the name resolves elsewhere.
FORGED_PTR = "203.0.113.10"
#: A visitor's address behind the proxy (no PTR).
VISITOR = "192.0.2.44"
#: The proxy in front of the site.
PROXY = "10.0.0.2"

PTR = {
    BINGBOT: "msnbot-198-51-100-7.search.msn.com.",
    YANDEXBOT: "spider-2001-db8--5.yandex.com",
    SPOOFER: "crawler.spoofer.example",
    FORGED_PTR: "msnbot-203-0-113-10.search.msn.com",
}
A = {
    "msnbot-198-51-100-7.search.msn.com": [BINGBOT],
    "spider-2001-db8--5.yandex.com": [YANDEXBOT],
    "crawler.spoofer.example": [SPOOFER],
    "msnbot-203-0-113-10.search.msn.com": ["192.0.2.200"],
}


class TableResolver:
    """Answers from :data:`PTR` and :data:`A`; counts its look-ups."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, str]] = []

    def reverse(self, address: str) -> str | None:
        self.calls.append(("PTR", address))
        return PTR.get(address)

    def forward(self, name: str) -> list[str]:
        self.calls.append(("A", name))
        return list(A.get(name.rstrip("."), []))
