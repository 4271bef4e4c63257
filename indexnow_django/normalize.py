"""URL normalization. Pure Python: no Django import.

Every URL that reaches an engine goes through :func:`normalize_urls`: relative
paths are joined to the base URL, scheme and host are lowercased, IDN hosts
become punycode, default ports and fragments are dropped and duplicates are
removed (first occurrence wins, order kept).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit, urlunsplit

__all__ = [
    "MAX_URL_LENGTH",
    "InvalidURL",
    "NormalizedURLs",
    "host_of",
    "normalize_host",
    "normalize_url",
    "normalize_urls",
]

#: The IndexNow protocol limits a URL to 2048 characters.
MAX_URL_LENGTH = 2048

_DEFAULT_PORTS = {"http": 80, "https": 443}

# An URL already in canonical form (lowercase ASCII host, no port, a path, no
# fragment, no white space) is returned as it is: bulk submissions and jobs
# carry such URLs by the million.
_CANONICAL = re.compile(r"https?://(?:[a-z0-9-]{1,63}\.)*[a-z0-9-]{1,63}/[^#\s]*")


class InvalidURL(ValueError):
    """A URL that cannot be submitted; the message says why."""


def normalize_host(host: str) -> str:
    """Lowercase a host (``name[:port]``), encode IDN labels, drop port 443.

    ``Example.COM``, ``example.com:443`` and ``example.com.`` are one host.
    """
    if not isinstance(host, str) or not host.strip() or "/" in host:
        raise InvalidURL(f"{host!r} is not a host name")
    return host_of(normalize_url(f"https://{host.strip()}/"))


def normalize_url(url: str, base_url: str | None = None) -> str:
    """Return the canonical absolute form of ``url`` or raise :class:`InvalidURL`."""
    if not isinstance(url, str):
        raise InvalidURL(f"not a string: {url!r}")
    if len(url) <= MAX_URL_LENGTH and not url.endswith("?") and _CANONICAL.fullmatch(url):
        return url
    url = url.strip()
    if not url:
        raise InvalidURL("empty URL")
    if base_url and not urlsplit(url).scheme and not url.startswith("//"):
        url = urljoin(base_url.rstrip("/") + "/", url.lstrip("/"))
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        if not scheme:
            raise InvalidURL("relative URL and no base URL to join it to")
        raise InvalidURL(f"scheme {scheme!r} is not http or https")
    if not parts.hostname:
        raise InvalidURL("no host")
    try:
        port = parts.port
    except ValueError as exc:
        raise InvalidURL("invalid port") from exc
    try:
        hostname = parts.hostname.rstrip(".").encode("idna").decode("ascii").lower()
    except UnicodeError as exc:
        raise InvalidURL(f"host {parts.hostname!r} is not a valid domain name") from exc
    netloc = hostname
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        netloc = f"{hostname}:{port}"
    path = parts.path or "/"
    result = urlunsplit((scheme, netloc, path, parts.query, ""))
    if len(result) > MAX_URL_LENGTH:
        raise InvalidURL(f"longer than {MAX_URL_LENGTH} characters")
    return result


def host_of(url: str) -> str:
    """The host (``name[:port]``) of an already normalized URL."""
    return url.split("/", 3)[2]


@dataclass
class NormalizedURLs:
    """The outcome of :func:`normalize_urls`."""

    valid: list[str] = field(default_factory=list)
    #: ``(url, reason)`` for every URL that was dropped.
    rejected: list[tuple[str, str]] = field(default_factory=list)

    def __iter__(self) -> Iterator[str]:
        return iter(self.valid)

    def __len__(self) -> int:
        return len(self.valid)


def normalize_urls(
    urls: Iterable[str],
    base_url: str | None = None,
    allowed_hosts: Iterable[str] | None = None,
) -> NormalizedURLs:
    """Normalize, filter by host and deduplicate ``urls``.

    ``allowed_hosts``, when given, are normalized hosts (see
    :func:`normalize_host`); a URL on any other host is rejected.
    """
    hosts = None if allowed_hosts is None else frozenset(allowed_hosts)
    result = NormalizedURLs()
    seen: set[str] = set()
    for raw in urls:
        try:
            url = normalize_url(raw, base_url)
        except InvalidURL as exc:
            result.rejected.append((str(raw), str(exc)))
            continue
        if hosts is not None and host_of(url) not in hosts:
            result.rejected.append((url, f"host {host_of(url)!r} is not in INDEXNOW['HOSTS']"))
            continue
        if url not in seen:
            seen.add(url)
            result.valid.append(url)
    return result
