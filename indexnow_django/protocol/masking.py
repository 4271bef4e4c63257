"""What logs, exceptions and command output show of secrets. No Django import.

The IndexNow key proves ownership of a site, and an engine endpoint may carry
credentials (``https://user:secret@host/…``, ``?token=…``): neither is ever
written out in full. :func:`mask_key` shows the first four characters of a
key, :func:`mask_keys` masks keys wherever they appear in a text (a key
file URL, an engine's answer, an exception message), :func:`mask_url`
hides the password and query-string values of a URL, and :func:`mask_url_in`
hides them wherever a text quotes that URL.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qsl, urlsplit, urlunsplit

__all__ = ["MASK", "mask_key", "mask_keys", "mask_url", "mask_url_in"]

#: What stands for a hidden credential.
MASK = "***"


def mask_key(key: str | None) -> str:
    """The key as logs and command output show it: its first 4 characters (``abcd…``);
    nothing of a key of 8 characters or fewer."""
    if not key:
        return "<none>"
    if len(key) <= 8:
        return "*" * len(key)
    return f"{key[:4]}…"


def mask_keys(text: str, keys: Iterable[str | None]) -> str:
    """``text`` with every occurrence of each of ``keys`` masked by :func:`mask_key`.

    Longer keys are replaced first, so a key that contains another is masked whole.
    """
    for key in sorted({k for k in keys if k}, key=len, reverse=True):
        text = text.replace(key, mask_key(key))
    return text


def mask_url(url: str) -> str:
    """``url`` with the password of its user info and the values of its query hidden.

    ``https://bot:s3cret@host/api?token=abc&x=1`` becomes
    ``https://bot:***@host/api?token=***&x=***``. A URL without credentials
    comes back unchanged.
    """
    try:
        parts = urlsplit(url)
        hostinfo = parts.netloc.rpartition("@")[2]
    except ValueError:
        return MASK
    netloc = parts.netloc
    if "@" in netloc:
        user, has_password, _ = netloc.rpartition("@")[0].partition(":")
        netloc = f"{user}:{MASK}@{hostinfo}" if has_password else f"{MASK}@{hostinfo}"
    query = parts.query
    if query:
        query = (
            "&".join(f"{name}={MASK}" for name, _ in parse_qsl(query, keep_blank_values=True))
            or MASK
        )
    return urlunsplit((parts.scheme, netloc, parts.path, query, parts.fragment))


def mask_url_in(text: str, url: str) -> str:
    """``text`` with the credentials of ``url`` masked wherever they appear in it.

    An error message quotes a URL in pieces (``url: /api?token=abc``): the
    whole URL, its user info and its query string are each replaced by their
    masked form (see :func:`mask_url`).
    """
    shown = mask_url(url)
    if shown == url:
        return text
    text = text.replace(url, shown)
    parts, masked = urlsplit(url), urlsplit(shown)
    for secret, hidden in (
        (parts.netloc.rpartition("@")[0], masked.netloc.rpartition("@")[0]),
        (parts.query, masked.query),
    ):
        if secret:
            text = text.replace(secret, hidden)
    return text
