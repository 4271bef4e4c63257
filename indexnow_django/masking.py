"""What logs, exceptions and command output show of secrets. No Django import.

The IndexNow key proves ownership of a site, and an engine endpoint may carry
credentials (``https://user:secret@host/…``, ``?token=…``): neither is ever
written out in full. :func:`mask_key` shows the first and last four characters
of a key, :func:`mask_keys` masks keys wherever they appear in a text (a key
file URL, an engine's answer, an exception message), and :func:`mask_url`
hides the password and query-string values of a URL.
"""

from __future__ import annotations

from collections.abc import Iterable
from urllib.parse import parse_qsl, urlsplit, urlunsplit

__all__ = ["MASK", "mask_key", "mask_keys", "mask_url"]

#: What stands for a hidden credential.
MASK = "***"


def mask_key(key: str | None) -> str:
    """The key as logs and command output show it: first and last 4 characters."""
    if not key:
        return "<none>"
    if len(key) <= 8:
        return "*" * len(key)
    return f"{key[:4]}…{key[-4:]}"


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
