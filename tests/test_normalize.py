import re

import pytest

from indexnow_django.protocol.normalize import (
    InvalidURL,
    normalize_entry,
    normalize_host,
    normalize_url,
    normalize_urls,
)

BASE = "https://www.example.com"


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("/a/", "https://www.example.com/a/"),
        ("a/b", "https://www.example.com/a/b"),
        ("HTTPS://WWW.Example.COM/Path/", "https://www.example.com/Path/"),
        ("https://www.example.com:443/x", "https://www.example.com/x"),
        ("http://www.example.com:80/x", "http://www.example.com/x"),
        ("https://www.example.com:8443/x", "https://www.example.com:8443/x"),
        ("https://www.example.com/x#section", "https://www.example.com/x"),
        ("https://www.example.com/x?b=2&a=1", "https://www.example.com/x?b=2&a=1"),
        ("https://www.example.com", "https://www.example.com/"),
        ("https://bücher.example/straße", "https://xn--bcher-kva.example/stra%C3%9Fe"),
        ("  /padded/  ", "https://www.example.com/padded/"),
        # RFC 3986: what a path or a query may not hold is percent-encoded (UTF-8),
        # escapes already there are kept, a "%" that starts none is encoded.
        ("/a b/", "https://www.example.com/a%20b/"),
        (
            "/café?q=crème brûlée",
            "https://www.example.com/caf%C3%A9?q=cr%C3%A8me%20br%C3%BBl%C3%A9e",
        ),
        ("/%7Euser/%2F", "https://www.example.com/%7Euser/%2F"),
        ("/100%/", "https://www.example.com/100%25/"),
        ('/a"<b>{c}|d\\e^`', "https://www.example.com/a%22%3Cb%3E%7Bc%7D%7Cd%5Ce%5E%60"),
        ("/q?a=1&b=/x?y:z@w", "https://www.example.com/q?a=1&b=/x?y:z@w"),
    ],
)
def test_normalize_url(raw, expected):
    assert normalize_url(raw, BASE) == expected


@pytest.mark.parametrize(
    ("raw", "reason"),
    [
        ("", "empty URL"),
        ("   ", "empty URL"),
        ("ftp://www.example.com/a", "scheme 'ftp' is not http or https"),
        ("mailto:someone@example.com", "scheme 'mailto' is not http or https"),
        ("https:///nohost", "no host"),
        ("https://www.example.com/" + "a" * 2048, "longer than 2048 characters"),
        ("/a\x00b", "contains the control character U+0000 at position 3"),
        ("/a\x1b[31m", "contains the control character U+001B at position 3"),
        ("/a\tb", "contains the control character U+0009 at position 3"),
        ("https://www.exa\nmple.com/", "contains the control character U+000A"),
        ("/a\x7f", "contains the control character U+007F"),
        ("/a\x85", "contains the control character U+0085"),
        ("https://ex<ample.com/", "host 'ex<ample.com' is not a valid domain name"),
        ("xx" * 5000 + "://host/", "scheme '" + "xx" * 40 + "…' is not http or https"),
        ("https://[www.example.com]/a/", "not a URL ("),
        ("http://[::1/", "not a URL (Invalid IPv6 URL)"),
        ("https://www.example.com]/", "not a URL (Invalid IPv6 URL)"),
    ],
)
def test_invalid_urls_say_why(raw, reason):
    with pytest.raises(InvalidURL, match=re.escape(reason)):
        normalize_url(raw, BASE)


def test_relative_url_without_base_is_invalid():
    with pytest.raises(InvalidURL, match="no base URL"):
        normalize_url("/a/")


def test_url_of_exactly_2048_characters_is_kept():
    url = "https://www.example.com/" + "a" * (2048 - len("https://www.example.com/"))
    assert normalize_url(url) == url


def test_normalize_urls_dedupes_filters_and_keeps_order():
    result = normalize_urls(
        [
            "/b/",
            "/a/",
            "https://WWW.EXAMPLE.COM/b/#top",
            "https://evil.example/x",
            "javascript:alert(1)",
        ],
        BASE,
        {"www.example.com"},
    )
    assert result.valid == ["https://www.example.com/b/", "https://www.example.com/a/"]
    assert result.rejected == [
        (
            "https://evil.example/x",
            "host 'evil.example' is not the host of BASE_URL (https://www.example.com); list "
            "every host to submit for in INDEXNOW['HOSTS']",
        ),
        ("javascript:alert(1)", "scheme 'javascript' is not http or https"),
    ]


def test_foreign_host_names_hosts_when_several_are_allowed():
    result = normalize_urls(
        ["https://evil.example/x"], BASE, {"www.example.com", "blog.example.com"}
    )
    assert result.rejected == [
        ("https://evil.example/x", "host 'evil.example' is not in INDEXNOW['HOSTS']")
    ]


@pytest.mark.parametrize(
    ("entry", "expected"),
    [
        ("/about/", "https://www.example.com/about/"),
        ("  /padded  ", "https://www.example.com/padded"),
        ("https://www.example.com/a/", "https://www.example.com/a/"),
        ("HTTP://www.example.com/a b", "http://www.example.com/a%20b"),
    ],
)
def test_entry_is_an_absolute_url_or_a_path(entry, expected):
    assert normalize_entry(entry, BASE) == expected


@pytest.mark.parametrize(
    ("entry", "reason"),
    [
        ("about", "neither an absolute URL nor a path starting with /"),
        ("www.example.com/a/", "neither an absolute URL nor a path starting with /"),
        ("//www.example.com/a/", "neither an absolute URL nor a path starting with /"),
        ("../up/", "neither an absolute URL nor a path starting with /"),
        ("mailto:someone@example.com", "scheme 'mailto' is not http or https"),
        ("/a\x1bb", "control character U+001B"),
    ],
)
def test_anything_else_is_not_an_entry(entry, reason):
    with pytest.raises(InvalidURL, match=re.escape(reason)):
        normalize_entry(entry, BASE)


def test_empty_list():
    result = normalize_urls([], BASE, {"www.example.com"})
    assert result.valid == [] and result.rejected == []


@pytest.mark.parametrize(
    ("raw", "expected"),
    [
        ("Example.COM", "example.com"),
        ("example.com:443", "example.com"),
        ("example.com:8000", "example.com:8000"),
        ("bücher.example", "xn--bcher-kva.example"),
    ],
)
def test_normalize_host(raw, expected):
    assert normalize_host(raw) == expected


@pytest.mark.parametrize("raw", ["", "https://example.com", "example.com/path"])
def test_normalize_host_rejects_non_hosts(raw):
    with pytest.raises(InvalidURL):
        normalize_host(raw)


@pytest.mark.parametrize(
    "url",
    [
        "https://www.example.com/a/",
        "https://www.example.com/a?b=1&c=2",
        "http://www.example.com/",
        "https://www.example.com/a?",
        "https://www.example.com/%7Euser/",
        "https://www.example.com/100%/",
        "https://www.example.com/a%2",
        "https://www.example.com/a[1]",
        "https://xn--bcher-kva.example/straße",
        "https://a..b/x",
    ],
)
def test_fast_path_agrees_with_the_full_normalization(url):
    """Canonical URLs skip the full parse; the result must be the same either way."""
    from urllib.parse import urlsplit, urlunsplit

    try:
        expected = normalize_url(" " + url)  # the leading space forces the full parse
    except InvalidURL:
        with pytest.raises(InvalidURL):
            normalize_url(url)
        return
    assert normalize_url(url) == expected
    parts = urlsplit(expected)
    assert urlunsplit(parts) == expected


@pytest.mark.parametrize(
    "base",
    [
        "https://www.example.com",
        "https://www.example.com/",
        "https://www.example.com/sub",
        "https://www.example.com/sub/",
        "http://www.example.com",
        "https://WWW.Example.com",
        "https://www.example.com:443",
        "https://www.example.com:8443",
        "https://www.example.com/?x=1",
        "https://bücher.example",
    ],
)
def test_paths_joined_without_parsing_give_what_parsing_gives(base):
    """The shortcut for plain paths agrees with the full parse, and leaves the rest to it."""
    from indexnow_django.protocol.normalize import _normalize_parsed

    paths = [
        "/",
        "/blog/hello/",
        "/blog/hello",
        "/a//b/",
        "/a/./b/",
        "/a/../b/",
        "/.well-known/x",
        "/search?q=1&p=2",
        "/search?",
        "/a%20b/",
        "/a%2/",
        "/caf%C3%A9/",
        "/café/",
        "/with space/",
        "/a#frag",
        "//other.example/x",
        "/" + "x" * 2100,
        "/a\x00b",
        "/a:b@c/",
    ]
    for path in paths:
        try:
            expected = _normalize_parsed(path, base)
        except InvalidURL as exc:
            with pytest.raises(InvalidURL) as raised:
                normalize_url(path, base)
            assert str(raised.value) == str(exc), path
        else:
            assert normalize_url(path, base) == expected, path
