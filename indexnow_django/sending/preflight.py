"""Only pages worth indexing: render a URL through the site itself before it is submitted.

With ``PREFLIGHT = {"ENABLED": True}``, :func:`screen` is called by
:func:`~indexnow_django.sending.send.deliver_now` with the public URLs of a delivery
(never the gone ones) before they are grouped into POSTs. Each URL is rendered
in-process through the site's own URLconf and middleware: a ``GET`` for the URL's
scheme, host and path, built as a WSGI request without a network, a session or a
cookie, and handed to Django's request handler (:class:`~django.core.handlers.base.BaseHandler`)
the way a server would, only without the server. The answer decides:

=====================================================  ==================================
the site answers                                       what happens
=====================================================  ==================================
200 and no ``noindex``                                 submitted
``noindex`` (or ``none``) in ``X-Robots-Tag`` or a     skipped, reason ``noindex``
``<meta name="robots">`` (or ``bingbot``, ``yandex``...)
``<link rel="canonical">`` naming another URL          skipped, reason ``canonical <URL>``
any other status, or an exception                      skipped, ``status 301`` / ``error``
=====================================================  ==================================

A skipped URL is recorded in the history with the outcome ``skipped`` and its reason
(:func:`~indexnow_django.sending.history.record_skipped`) and logged. Only the head of an HTML
answer is read (up to :data:`MAX_BYTES`). Rendering costs a request's work per URL;
a view with side effects (a view counter) runs them, as for a visitor.

The end of each rendering is a request's end (``request_finished``), except that the
worker's database connection is left open, as Django's test client leaves it.
"""

from __future__ import annotations

import logging
import re
import sys
from collections.abc import Collection, Sequence
from html.parser import HTMLParser
from io import BytesIO
from typing import TYPE_CHECKING, Any
from urllib.parse import unquote_to_bytes, urljoin, urlsplit

from ..conf import IndexNowSettings

if TYPE_CHECKING:
    from django.http import HttpResponseBase

logger = logging.getLogger(__name__)

__all__ = ["MAX_BYTES", "USER_AGENT", "Renderer", "reason_to_skip", "screen"]

#: Bytes of an answer read to find its ``<head>``'s robots and canonical tags.
MAX_BYTES = 512 * 1024
#: The ``User-Agent`` of a rendering, for a site that wants to tell it apart.
USER_AGENT = "indexnow-django-preflight"
#: Robots names that speak to the engines IndexNow reaches (``robots`` speaks to all).
ROBOTS_NAMES = frozenset(
    {"robots", "bingbot", "msnbot", "yandex", "yandexbot", "naverbot", "yeti", "seznambot"}
)
#: Directives that take a value after a colon (not a robot's name).
_VALUED = frozenset({"unavailable_after", "max-snippet", "max-image-preview", "max-video-preview"})


def screen(
    urls: list[str], gone: Collection[str], *, batch_id: str, conf: IndexNowSettings
) -> tuple[list[str], list[tuple[str, str]]]:
    """``(kept, skipped)``: those of the normalized ``urls`` worth submitting (every one of
    ``gone``, never rendered, and the public ones whose page says so), and the others with
    their reason, recorded in the history and logged."""
    from .history import record_skipped

    renderer: Renderer | None = None
    kept: list[str] = []
    skipped: dict[str, list[tuple[str, str]]] = {}
    for url in urls:
        if url in gone:
            kept.append(url)
            continue
        renderer = renderer or Renderer()
        reason = renderer.reason_to_skip(url)
        if reason is None:
            kept.append(url)
            continue
        logger.info("IndexNow preflight skipped batch=%s url=%s reason=%s", batch_id, url, reason)
        skipped.setdefault(urlsplit(url).hostname or "", []).append((url, reason))
    for host, held in skipped.items():
        record_skipped(host, held, batch_id=batch_id, conf=conf)
    return kept, [pair for held in skipped.values() for pair in held]


def reason_to_skip(url: str) -> str | None:
    """Why ``url`` should not be submitted, as its page answers now; ``None``: submit it."""
    return Renderer().reason_to_skip(url)


class Renderer:
    """Renders URLs through the site's middleware and URLconf, loaded once."""

    def __init__(self) -> None:
        from django.core.handlers.base import BaseHandler

        self.handler = BaseHandler()
        self.handler.load_middleware()

    def reason_to_skip(self, url: str) -> str | None:
        try:
            status, headers, head = self.render(url)
        except Exception as exc:
            logger.warning(
                "IndexNow preflight could not render url=%s: %s: %s",
                url,
                type(exc).__name__,
                exc,
            )
            return "error"
        if status != 200:
            return f"status {status}"
        if any(_says_noindex(value) for value in headers):
            return "noindex"
        page = _Head()
        page.read(head)
        if page.noindex:
            return "noindex"
        if page.canonical is not None:
            canonical = urljoin(url, page.canonical.strip())
            if _comparable(canonical) != _comparable(url):
                return f"canonical {canonical}"
        return None

    def render(self, url: str) -> tuple[int, list[str], str]:
        """``(status, X-Robots-Tag values, the start of an HTML body)`` of a GET of ``url``."""
        from django.core.handlers.wsgi import WSGIRequest
        from django.core.signals import request_finished
        from django.db import close_old_connections
        from django.urls import get_urlconf, set_urlconf
        from django.utils import translation

        request = WSGIRequest(_environ(url))
        urlconf = get_urlconf()
        with translation.override(translation.get_language()):
            try:
                response = self.handler.get_response(request)
                try:
                    status = response.status_code
                    headers = _robots_headers(response)
                    head = _head_of(response) if status == 200 else ""
                finally:
                    # The end of a request, but the worker keeps its database connection.
                    request_finished.disconnect(close_old_connections)
                    try:
                        response.close()
                    finally:
                        request_finished.connect(close_old_connections)
            finally:
                set_urlconf(urlconf)
        return status, headers, head


def _environ(url: str) -> dict[str, Any]:
    parts = urlsplit(url)
    secure = parts.scheme == "https"
    port = str(parts.port or (443 if secure else 80))
    return {
        "REQUEST_METHOD": "GET",
        "SCRIPT_NAME": "",
        # As a WSGI server hands the path over: the raw bytes, as latin-1.
        "PATH_INFO": unquote_to_bytes(parts.path or "/").decode("iso-8859-1"),
        "QUERY_STRING": parts.query,
        "SERVER_NAME": parts.hostname or "",
        "SERVER_PORT": port,
        "SERVER_PROTOCOL": "HTTP/1.1",
        "HTTP_HOST": parts.netloc.rpartition("@")[2],
        "HTTP_USER_AGENT": USER_AGENT,
        "HTTP_ACCEPT": "text/html,application/xhtml+xml;q=0.9,*/*;q=0.8",
        "REMOTE_ADDR": "127.0.0.1",
        "wsgi.version": (1, 0),
        "wsgi.url_scheme": parts.scheme,
        "wsgi.input": BytesIO(b""),
        "wsgi.errors": sys.stderr,
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
        **({"HTTPS": "on"} if secure else {}),
    }


def _robots_headers(response: HttpResponseBase) -> list[str]:
    value = response.headers.get("X-Robots-Tag")
    return [value] if value else []


def _head_of(response: HttpResponseBase) -> str:
    """The first :data:`MAX_BYTES` of an HTML answer, decoded; ``""`` for anything else."""
    content_type = response.headers.get("Content-Type", "")
    if "html" not in content_type.lower():
        return ""
    charset = getattr(response, "charset", None) or "utf-8"
    if getattr(response, "streaming", False):
        chunks: list[bytes] = []
        size = 0
        for chunk in response:
            chunk = chunk if isinstance(chunk, bytes) else str(chunk).encode(charset)
            chunks.append(chunk)
            size += len(chunk)
            if size >= MAX_BYTES:
                break
        body = b"".join(chunks)
    else:
        body = response.content  # type: ignore[attr-defined]
    return body[:MAX_BYTES].decode(charset, errors="replace")


def _says_noindex(value: str) -> bool:
    """Whether an ``X-Robots-Tag`` value forbids indexing to all robots or an engine's."""
    robot: str | None = None
    for part in value.split(","):
        name, colon, rest = part.partition(":")
        if colon and name.strip().lower() not in _VALUED:
            robot, part = name.strip().lower(), rest
        if robot is not None and robot not in ROBOTS_NAMES:
            continue
        if _forbids(part):
            return True
    return False


def _forbids(directives: str) -> bool:
    return bool({"noindex", "none"} & set(re.split(r"[\s,]+", directives.strip().lower())))


def _comparable(url: str) -> tuple[str, str, str, str]:
    """A URL as two that name the same page compare: case of scheme and host, default
    port, empty path, fragment."""
    parts = urlsplit(url)
    scheme = parts.scheme.lower()
    host = (parts.hostname or "").lower()
    port = parts.port
    if port is not None and port != (443 if scheme == "https" else 80):
        host = f"{host}:{port}"
    return scheme, host, parts.path or "/", parts.query


class _Stop(Exception):
    """The ``<head>`` is over."""


class _Head(HTMLParser):
    """The robots ``<meta>`` and the canonical ``<link>`` of a page's ``<head>``."""

    def __init__(self) -> None:
        super().__init__(convert_charrefs=True)
        self.noindex = False
        self.canonical: str | None = None

    def read(self, html: str) -> None:
        try:
            self.feed(html)
            self.close()
        except _Stop:
            pass

    def handle_starttag(self, tag: str, attrs: Sequence[tuple[str, str | None]]) -> None:
        values = {name.lower(): value or "" for name, value in attrs}
        if tag == "body":
            raise _Stop
        if tag == "meta" and values.get("name", "").strip().lower() in ROBOTS_NAMES:
            self.noindex = self.noindex or _forbids(values.get("content", ""))
        elif tag == "link" and self.canonical is None:
            rel = values.get("rel", "").lower().split()
            if "canonical" in rel and values.get("href"):
                self.canonical = values["href"]

    def handle_startendtag(self, tag: str, attrs: Sequence[tuple[str, str | None]]) -> None:
        self.handle_starttag(tag, attrs)
