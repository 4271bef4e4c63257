"""URL normalization. Pure Python: no Django import.

Every URL that reaches an engine goes through :func:`normalize_url`: relative
paths are joined to the base URL, scheme and host are lowercased, IDN hosts
become punycode, default ports and fragments are dropped, characters that
RFC 3986 does not allow in a path or query (spaces, non-ASCII letters, a ``%``
that starts no escape) are percent-encoded as UTF-8, and a URL holding a
control character is refused. :func:`normalize_urls` also drops foreign hosts
and duplicates (first occurrence wins, order kept).

:func:`normalize_entry` is the stricter rule for what a person types (the
``indexnow_submit`` command): an absolute URL or a path starting with ``/``.
"""

from __future__ import annotations

import ipaddress
import re
from collections.abc import Container, Iterable, Iterator, Mapping
from dataclasses import dataclass, field
from urllib.parse import quote, urljoin, urlsplit, urlunsplit

from .client import excerpt

__all__ = [
    "MAX_URL_LENGTH",
    "InvalidURL",
    "NormalizedURLs",
    "canonical_lines",
    "foreign_host_reason",
    "host_of",
    "normalize_entry",
    "normalize_host",
    "normalize_url",
    "normalize_urls",
    "not_public_reason",
]

#: The IndexNow protocol limits a URL to 2048 characters.
MAX_URL_LENGTH = 2048

_DEFAULT_PORTS = {"http": 80, "https": 443}

#: How much of a rejected input a message quotes.
EXCERPT_CHARS = 80

# An URL already in canonical form (lowercase ASCII host, no port, a path and
# query of characters RFC 3986 allows, every ``%`` an escape, no fragment) is
# returned as it is: bulk submissions and jobs carry such URLs by the million.
_CANONICAL = re.compile(
    r"https?://(?:[a-z0-9-]{1,63}\.)*[a-z0-9-]{1,63}/[A-Za-z0-9\-._~!$&'()*+,;=:@/?%]*"
)
# A character to percent-encode in a path or query: outside RFC 3986's
# unreserved, sub-delims, ":", "@", "/" and "?", or a "%" that starts no escape.
_TO_ENCODE = re.compile(r"%(?![0-9A-Fa-f]{2})|[^A-Za-z0-9\-._~!$&'()*+,;=:@/?%]")
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
# C0 controls, DEL and C1 controls: never part of a URL, and urlsplit() would
# silently drop some of them.
_CONTROL = re.compile(r"[\x00-\x1f\x7f-\x9f]")
_HOST_NAME = re.compile(r"[a-z0-9_-]+(?:\.[a-z0-9_-]+)*")
# Leading and trailing white space dropped from an input: ASCII only, so that
# a control character such as NEL (U+0085) is refused, not trimmed.
_ASCII_SPACE = " \t\n\r\x0b\x0c"
_SCHEME = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*:")
# The bytes of a canonical URL (see _CANONICAL), and the line breaks between them.
_LINE_BYTES = (
    b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~!$&'()*+,;=:@/?%\r\n"
)
_BAD_PERCENT_BYTES = re.compile(rb"%(?![0-9A-Fa-f]{2})")


#: Name suffixes that only a private network resolves (RFC 6761, 6762, 8375, and the
#: ``internal`` and ``lan`` names of home and company networks).
_PRIVATE_SUFFIXES = (".localhost", ".local", ".internal", ".lan", ".home.arpa")
#: The domain of a fresh ``django.contrib.sites`` Site: a placeholder, no site of yours.
PLACEHOLDER_DOMAIN = "example.com"


def not_public_reason(host: str) -> str | None:
    """Why a URL on ``host`` (``name[:port]``, normalized) can be no public site's, or
    ``None``: localhost, a name with no dot or of a private suffix, an address that is
    not global (loopback, private, link-local), Django's placeholder ``example.com``."""
    name = host.rsplit(":", 1)[0] if not host.endswith("]") else host
    name = name.strip("[]").rstrip(".")
    try:
        address = ipaddress.ip_address(name)
    except ValueError:
        pass
    else:
        if address.is_global:
            return None
        if address.is_loopback:
            return "a loopback address"
        if address.is_link_local:
            return "a link-local address"
        return "a private address"
    if name == "localhost" or name.endswith(_PRIVATE_SUFFIXES):
        return "a name only a private network resolves"
    if "." not in name:
        return "a name with no dot"
    if name == PLACEHOLDER_DOMAIN:
        return "the placeholder domain of a fresh django.contrib.sites Site"
    return None


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
        raise InvalidURL(f"not a string: {excerpt(repr(url), EXCERPT_CHARS)}")
    if _is_canonical(url):
        return url
    if (
        base_url
        and url[:1] == "/"
        and "//" not in url  # urljoin() drops empty segments
        and "/." not in url  # nor dot segments
        and "?" not in base_url
        and "#" not in base_url
    ):
        # A plain path (what get_absolute_url() gives) joined to a canonical base
        # is canonical as it stands: no parsing needed.
        joined = base_url.rstrip("/") + url
        if _is_canonical(joined):
            return joined
    return _normalize_parsed(url, base_url)


def _is_canonical(url: str) -> bool:
    return (
        len(url) <= MAX_URL_LENGTH
        and not url.endswith("?")
        and _CANONICAL.fullmatch(url) is not None
        and ("%" not in url or not _BAD_PERCENT.search(url))
    )


def _normalize_parsed(url: str, base_url: str | None) -> str:
    """:func:`normalize_url` the long way: parse, join, check and rebuild every part."""
    url = url.strip(_ASCII_SPACE)
    if not url:
        raise InvalidURL("empty URL")
    control = _CONTROL.search(url)
    if control:
        raise InvalidURL(
            f"contains the control character U+{ord(control.group()):04X} "
            f"at position {control.start() + 1}"
        )
    try:
        if base_url and not urlsplit(url).scheme and not url.startswith("//"):
            # "./" keeps a first segment with a colon ("/a:b/") from reading as a scheme.
            url = urljoin(base_url.rstrip("/") + "/", "./" + url.lstrip("/"))
        parts = urlsplit(url)
    except ValueError as exc:  # brackets that hold no IPv6 address ("https://[x]/")
        raise InvalidURL(f"not a URL ({exc})") from exc
    scheme = parts.scheme.lower()
    if scheme not in _DEFAULT_PORTS:
        if not scheme:
            raise InvalidURL("relative URL and no base URL to join it to")
        raise InvalidURL(f"scheme {excerpt(scheme, EXCERPT_CHARS)!r} is not http or https")
    if not parts.hostname:
        raise InvalidURL("no host")
    try:
        port = parts.port
    except ValueError as exc:
        raise InvalidURL("invalid port") from exc
    not_a_host = f"host {excerpt(parts.hostname, EXCERPT_CHARS)!r} is not a valid domain name"
    try:
        hostname = parts.hostname.rstrip(".").encode("idna").decode("ascii").lower()
    except UnicodeError as exc:
        raise InvalidURL(not_a_host) from exc
    if not _HOST_NAME.fullmatch(hostname):
        raise InvalidURL(not_a_host)
    netloc = hostname
    if port is not None and port != _DEFAULT_PORTS[scheme]:
        netloc = f"{hostname}:{port}"
    path = _encoded(parts.path or "/")
    result = urlunsplit((scheme, netloc, path, _encoded(parts.query), ""))
    if len(result) > MAX_URL_LENGTH:
        raise InvalidURL(f"longer than {MAX_URL_LENGTH} characters")
    return result


def _encoded(part: str) -> str:
    """``part`` (a path or a query) with what RFC 3986 does not allow percent-encoded."""
    return _TO_ENCODE.sub(lambda match: quote(match.group(), safe=""), part)


def normalize_entry(entry: str, base_url: str) -> str:
    """Normalize a URL typed by a person: an absolute URL, or a path starting with ``/``.

    Anything else (``about``, ``www.example.com/a``, ``//host/a``) raises
    :class:`InvalidURL` rather than being guessed at.
    """
    text = entry.strip(_ASCII_SPACE) if isinstance(entry, str) else entry
    if (
        isinstance(text, str)
        and not _SCHEME.match(text)
        and (not text.startswith("/") or text.startswith("//"))
    ):
        raise InvalidURL("neither an absolute URL nor a path starting with /")
    return normalize_url(text, base_url)


def canonical_lines(block: bytes, hosts: Container[str]) -> tuple[str, list[str]] | None:
    """The lines of ``block`` and their host, when each line is a URL that
    :func:`normalize_entry` returns as it is, all of one scheme and one host of ``hosts``.

    ``block`` is lines separated by ``\\n`` (each may end with ``\\r``), without the
    last line break. ``None`` when any line is not such a URL (a comment, a blank
    line, white space, a URL to encode or on another host...): the caller then
    reads the lines one by one. A few scans of the whole block, none per line:
    files of canonical URLs are read by the million.
    """
    if block.translate(None, _LINE_BYTES):  # a byte that no canonical URL holds
        return None
    if b"\r" in block:  # every line must end with it: it is stripped
        lines = block.count(b"\n") + 1
        if not (
            block.endswith(b"\r")
            and block.count(b"\r") == lines
            and block.count(b"\r\n") == lines - 1
        ):
            return None
        block = block[:-1].replace(b"\r\n", b"\n")
    scheme = 8 if block.startswith(b"https://") else 7 if block.startswith(b"http://") else 0
    end = block.find(b"/", scheme) if scheme else -1
    if end < 0:
        return None
    prefix = block[: end + 1]
    host = prefix[scheme:end].decode("ascii")
    if (
        host not in hosts
        or not _CANONICAL.fullmatch(prefix.decode("ascii"))
        or block.count(b"\n" + prefix) != block.count(b"\n")
        or block.endswith(b"?")
        or b"?\n" in block
        or (b"%" in block and _BAD_PERCENT_BYTES.search(block))
    ):
        return None
    urls = block.decode("ascii").split("\n")
    if max(map(len, urls)) > MAX_URL_LENGTH:
        return None
    return host, urls


def foreign_host_reason(host: str, allowed_hosts: Iterable[str], base_url: str | None) -> str:
    """Why a URL on ``host`` is not submitted, in the terms of the settings that decide it.

    With ``HOSTS`` left out the only allowed host is that of ``BASE_URL``, and
    the message says so rather than naming a setting the site never set. A host
    held back because it cannot be public (``allowed_hosts.withheld``, see
    :class:`~indexnow_django.conf.hosts.Hosts`) is named with why and where it came from.
    """
    shown = excerpt(host, EXCERPT_CHARS)
    withheld: Mapping[str, str] = getattr(allowed_hosts, "withheld", None) or {}
    if host in withheld:
        return f"host {shown!r} cannot be public ({withheld[host]}): never sent to an engine"
    allowed = set(allowed_hosts)
    if base_url and allowed == {urlsplit(base_url).netloc}:
        return (
            f"host {shown!r} is not the host of BASE_URL ({base_url}); list every host "
            "to submit for in INDEXNOW['HOSTS']"
        )
    return f"host {shown!r} is not in INDEXNOW['HOSTS']"


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
            named = allowed_hosts if isinstance(allowed_hosts, Mapping) else hosts
            reason = foreign_host_reason(host_of(url), named, base_url)
            result.rejected.append((url, reason))
            continue
        if url not in seen:
            seen.add(url)
            result.valid.append(url)
    return result
