"""Blocks of canonical URLs read from a file skip the per-line checks, and change nothing.

:func:`~indexnow_django.protocol.normalize.canonical_lines` is checked against the rule
each line otherwise goes through (strip, skip blank lines and comments,
:func:`~indexnow_django.protocol.normalize.normalize_entry`, the host check); the command
is checked on files where such blocks, lines that need the full rule and
invalid lines alternate.
"""

from __future__ import annotations

import random
from collections.abc import Callable
from io import StringIO
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from indexnow_django.protocol.normalize import InvalidURL, canonical_lines, host_of, normalize_entry
from indexnow_django.testing import LoopbackEngine
from tests.needs import UNTHROTTLED

BASE = "https://www.example.com"
HOSTS = frozenset({"www.example.com", "blog.example.com", "example.com:8443", "under_score.org"})

#: Lines a file of canonical URLs holds: each must come out of a block as it is.
CANONICAL = [
    f"{BASE}/",
    f"{BASE}/a/b/c",
    f"{BASE}/search?q=a+b&page=2",
    f"{BASE}/%C3%A9t%C3%A9/",
    f"{BASE}/odd-but-allowed/!$&'()*+,;=:@~._-",
    "http://www.example.com/plain-http/",
    "https://blog.example.com/post/1",
    f"{BASE}/" + "x" * (2048 - len(BASE) - 1),
]
#: Lines that a block does not take as they are: the full rule changes or refuses
#: most of them; a port or an underscore in the host is left to it too.
NOT_CANONICAL = [
    "",
    "   ",
    "# a comment",
    "#https://www.example.com/commented/",
    f" {BASE}/leading-space/",
    f"{BASE}/trailing-tab/\t",
    "/a-path/",
    "HTTPS://WWW.EXAMPLE.COM/upper/",
    "https://WWW.example.com/upper-host/",
    "https://www.example.com:443/default-port/",
    "https://example.com:8443/port-kept-but-not-canonical-form/",
    "https://www.example.com.",
    "https://www.example.com",
    "https://www.example.com?q",
    f"{BASE}/ends-with-question-mark?",
    f"{BASE}/fragment#top",
    f"{BASE}/a space/",
    f"{BASE}/carriage\rreturn/",
    f"{BASE}/bad%percent",
    f"{BASE}/bad%4",
    f"{BASE}/bad%",
    f"{BASE}/caf\u00e9/",
    f"{BASE}/" + "x" * (2048 - len(BASE)),
    "https://elsewhere.org/foreign-host/",
    "https://under_score.org/underscore-host/",
    "https://www.example.com\\back/",
    "https://www.example.com/\x7fdel",
    "ftp://www.example.com/file",
    "https:///no-host",
    "https://user@www.example.com/userinfo",
    "www.example.com/no-scheme",
    "//www.example.com/protocol-relative",
]


def by_the_full_rule(line: bytes) -> str | None:
    """What reading ``line`` one by one makes of it: the URL, or ``None`` (skipped, invalid)."""
    try:
        text = line.decode("utf-8").strip(" \t\r\x0b\x0c")
    except UnicodeDecodeError:
        return None
    if not text or text.startswith("#"):
        return None
    try:
        url = normalize_entry(text, BASE)
    except InvalidURL:
        return None
    return url if host_of(url) in HOSTS else None


@pytest.mark.parametrize("line", CANONICAL)
@pytest.mark.parametrize("ending", ["", "\r"])
def test_a_canonical_line_comes_out_as_it_is(line: str, ending: str) -> None:
    assert by_the_full_rule((line + ending).encode()) == line
    assert canonical_lines((line + ending).encode(), HOSTS) == (host_of(line), [line])


@pytest.mark.parametrize("line", NOT_CANONICAL)
def test_any_other_line_is_left_to_the_full_rule(line: str) -> None:
    assert canonical_lines(line.encode(), HOSTS) is None
    # One such line spoils a block of canonical ones, wherever it is.
    for at in (0, 1, 3):
        lines = [f"{BASE}/{n}/" for n in range(3)]
        lines.insert(at, line)
        assert canonical_lines("\n".join(lines).encode(), HOSTS) is None
        assert canonical_lines("\r\n".join(lines).encode() + b"\r", HOSTS) is None


def test_blocks_taken_at_once_agree_with_the_full_rule_line_by_line() -> None:
    pick = random.Random(20261130)
    samples = [*CANONICAL, *NOT_CANONICAL]
    taken = 0
    for _ in range(3000):
        lines = [pick.choice(samples) for _ in range(pick.randint(1, 6))]
        if pick.random() < 0.7:  # mostly blocks of canonical lines, as files are
            lines = [pick.choice(CANONICAL) for _ in range(pick.randint(1, 6))]
        crlf = pick.random() < 0.2
        block = ("\r\n" if crlf else "\n").join(lines) + ("\r" if crlf else "")
        found = canonical_lines(block.encode(), HOSTS)
        expected = [by_the_full_rule(line.encode()) for line in lines]
        if found is None:
            # Left to the full rule: some line is not canonical, or they differ in host
            # or scheme.
            if set(lines) <= set(CANONICAL):
                assert len({line.split("/", 3)[0] + host_of(line) for line in lines}) > 1
            continue
        taken += 1
        host, urls = found
        assert urls == lines == expected
        assert {host_of(url) for url in urls} == {host}
    assert taken > 500


def submit(*args: str) -> tuple[str, str]:
    """Run the command; return (stdout, stderr)."""
    out, err = StringIO(), StringIO()
    call_command("indexnow_submit", *args, stdout=out, stderr=err, no_color=True)
    return out.getvalue(), err.getvalue()


@pytest.mark.indexnow(**UNTHROTTLED)  # what is read, not how fast it goes out
@pytest.mark.parametrize("newline", ["\n", "\r\n"])
def test_file_of_canonical_blocks_and_other_lines_is_read_as_line_by_line(
    engine: LoopbackEngine,
    indexnow_settings: Callable[..., Any],
    tmp_path: Path,
    newline: str,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    from indexnow_django.manual import entries

    blocks: list[int] = []

    def spy(block: bytes, hosts: Any) -> Any:
        found = canonical_lines(block, hosts)
        blocks.append(len(found[1]) if found else 0)
        return found

    monkeypatch.setattr(entries, "canonical_lines", spy)
    # No debounce: a URL repeated past its batch is sent again, as the batches say.
    indexnow_settings(
        HOSTS=["www.example.com", "blog.example.com"],
        BATCH={"MAX_URLS": 1000},
        DEBOUNCE={"TTL": 0},
    )
    tag = f"blocks-{len(newline)}"
    lines: list[str] = []
    for part in range(3):
        # Some 240 KB of canonical URLs (blocks read at once), a duplicate in it.
        lines += [f"{BASE}/{tag}/{part}/{n}/page-{'x' * (n % 40)}" for n in range(3000)]
        lines.insert(len(lines) - 700, lines[-1200])
        lines += [
            "# the next ones need the full rule",
            "",
            f"{BASE}/{tag}/{part}/caf\u00e9/",
            f"/{tag}/{part}/relative/",
            f"https://elsewhere.org/{tag}/{part}/",
            f"https://blog.example.com/{tag}/{part}/",
            f"{BASE}/{tag}/{part}/0/page-",  # a duplicate of the first URL of the part
        ]
    path = tmp_path / "urls.txt"
    path.write_bytes(newline.join(lines).encode() + newline.encode())

    stdout, stderr = submit("--file", str(path), "--sync")

    # What reading line by line makes of it: the URLs in order, once per batch of a host.
    kept = [url for url in map(by_the_full_rule, (line.encode() for line in lines)) if url]
    expected: dict[str, list[dict[str, None]]] = {}
    duplicates = 0
    for url in kept:
        batches = expected.setdefault(host_of(url), [{}])
        if url in batches[-1]:
            duplicates += 1
            continue
        batches[-1][url] = None
        if len(batches[-1]) == 1000:
            batches.append({})
    for host, batches in expected.items():
        posts = [post.urls for post in engine.posts if post.json["host"] == host]
        assert posts == [list(batch) for batch in batches if batch]
    assert {post.json["host"] for post in engine.posts} == set(expected)
    # Most lines were taken a block at a time; the others line by line.
    assert sum(blocks) > len(lines) / 2 and 0 in blocks
    foreign = [n + 1 for n, line in enumerate(lines) if line.startswith("https://elsewhere.org/")]
    assert [line.split(":")[0] for line in stderr.splitlines()] == [
        f"{path} line {number}" for number in foreign
    ]
    assert stdout.rstrip().splitlines()[-1] == (
        f"{len(lines) - 6} read, {len(kept)} valid, 3 invalid, {duplicates} duplicate(s), "
        f"0 debounced, {len(kept) - duplicates} accepted, 0 rejected, 0 failed."
    )
