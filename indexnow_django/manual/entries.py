"""Lists of URLs as people give them: lines of a file, a stream or pasted text.

Read strictly: UTF-8 (a byte-order mark dropped), lines bounded in length, a
file with NUL bytes refused whole. Each line becomes an :class:`Entry` that
says where it was read, or a problem that says why it cannot be; blank lines
and ``#`` comments are skipped. ``manage.py indexnow_submit`` and the admin's
"Submit URLs" page read their input here, so both follow one set of rules.
"""

from __future__ import annotations

from collections.abc import Container, Iterable, Iterator
from typing import IO, TYPE_CHECKING, Any, NamedTuple

from ..protocol.normalize import (
    MAX_URL_LENGTH,
    InvalidURL,
    canonical_lines,
    host_of,
    normalize_entry,
)

if TYPE_CHECKING:
    from ..conf import IndexNowSettings

__all__ = [
    "MAX_LINE_BYTES",
    "READ_BLOCK",
    "Entry",
    "NotText",
    "Ready",
    "parse_line",
    "read_lines",
    "read_pasted",
]

#: Bytes read from an input file at a time.
READ_BLOCK = 64 * 1024
#: A line longer than this (bytes) cannot hold a URL: it is skipped without being kept.
MAX_LINE_BYTES = 4 * MAX_URL_LENGTH

_BOM = b"\xef\xbb\xbf"


class NotText(ValueError):
    """The input is not text (the message says why); nothing of it may be submitted."""


class Entry(NamedTuple):
    """One entry as read, and where it was read (for error messages)."""

    raw: str
    #: A ``str.format`` template with one ``{}`` for :attr:`position`.
    origin: str
    position: object
    #: Typed by a person (an argument, a line of a file): an absolute URL or a
    #: path starting with ``/``. URLs from models and sitemaps follow the
    #: package's rule (paths are joined to ``BASE_URL``).
    typed: bool = True
    #: Why the entry could not even be read (a line that is not UTF-8, too long).
    problem: str | None = None

    @property
    def where(self) -> str:
        return self.origin.format(self.position)


class Ready(NamedTuple):
    """Lines read at once that are all canonical URLs of one allowed host: nothing to check."""

    host: str
    urls: list[str]


def read_lines(stream: IO[Any], origin: str, hosts: Container[str]) -> Iterator[Entry | Ready]:
    """The entries of a stream of lines (bytes, or text), read in blocks: no line is
    held whole past :data:`MAX_LINE_BYTES`. A stream with NUL bytes in its first
    block is not text: :class:`NotText` is raised before any entry is given. The
    whole lines of a block that are all canonical URLs of one of ``hosts`` come as
    one :class:`Ready`. ``origin``: where a line is, with ``{}`` for its number."""
    number = 0
    buffer = b""
    overlong = False
    first = True
    while True:
        block = stream.read(READ_BLOCK)
        if isinstance(block, str):  # a text stream (tests, a wrapped stdin)
            block = block.encode("utf-8", "surrogatepass")
        if first:
            first = False
            if b"\0" in block:
                raise NotText("it holds NUL bytes")
            if block.startswith(_BOM):
                block = block[len(_BOM) :]
        if not block:
            break
        if overlong:
            end = block.find(b"\n")
            if end < 0:
                continue
            number += 1
            yield Entry("", origin, number, problem=f"longer than {MAX_URL_LENGTH} characters")
            overlong = False
            block = block[end + 1 :]
        buffer += block
        end = buffer.rfind(b"\n")
        if end >= 0:
            whole, buffer = buffer[:end], buffer[end + 1 :]
            ready = canonical_lines(whole, hosts)
            if ready is not None:
                number += len(ready[1])
                yield Ready(*ready)
            else:
                for line in whole.split(b"\n"):
                    number += 1
                    entry = parse_line(line, origin, number)
                    if entry is not None:
                        yield entry
        if len(buffer) > MAX_LINE_BYTES:
            overlong = True
            buffer = b""
    if overlong:
        yield Entry("", origin, number + 1, problem=f"longer than {MAX_URL_LENGTH} characters")
    elif buffer:
        entry = parse_line(buffer, origin, number + 1)
        if entry is not None:
            yield entry


def parse_line(line: bytes, origin: str, number: int) -> Entry | None:
    """One line as an entry; ``None`` for a blank line or a comment."""
    if len(line) > MAX_LINE_BYTES:
        return Entry("", origin, number, problem=f"longer than {MAX_URL_LENGTH} characters")
    try:
        text = line.decode("utf-8")
    except UnicodeDecodeError as exc:
        return Entry(
            "",
            origin,
            number,
            problem=f"not UTF-8 (byte 0x{line[exc.start]:02x} at position {exc.start + 1})",
        )
    text = text.strip(" \t\r\x0b\x0c")
    if not text or text.startswith("#"):
        return None
    return Entry(text, origin, number)


def read_pasted(text: str, conf: IndexNowSettings) -> tuple[list[str], list[tuple[int, str, str]]]:
    """The URLs of pasted ``text`` (one a line), by the rules of ``indexnow_submit``.

    Returns the valid URLs (normalized, first occurrence kept) and, for each
    invalid line, ``(line number, line, reason)``.
    """
    valid: dict[str, None] = {}
    invalid: list[tuple[int, str, str]] = []
    for number, line in enumerate(text.split("\n"), 1):
        entry = parse_line(line.encode("utf-8", "surrogatepass"), "line {}", number)
        if entry is None:
            continue
        if entry.problem is not None:
            invalid.append((number, line.strip(), entry.problem))
            continue
        try:
            url = normalize_entry(entry.raw, conf.base_url)
        except InvalidURL as exc:
            invalid.append((number, entry.raw, str(exc)))
            continue
        host = host_of(url)
        if host not in conf.hosts:
            invalid.append((number, entry.raw, _not_this_site(host, conf.hosts)))
            continue
        valid[url] = None
    return list(valid), invalid


#: Hosts of the site named when a pasted URL is on none of them.
HOSTS_NAMED = 3


def _not_this_site(host: str, hosts: Iterable[str]) -> str:
    """Why a pasted URL on ``host`` is refused, in an editor's words: the site's hosts, not
    the setting that lists them."""
    names = sorted(hosts)
    shown = ", ".join(names[:HOSTS_NAMED]) + (", …" if len(names) > HOSTS_NAMED else "")
    return f"{host} is not a host of this site ({shown})"
