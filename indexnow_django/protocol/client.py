"""The IndexNow engine API: engines, what a POST carries, what an answer means, the retry
policy. No Django import.

:meth:`IndexNowClient.post` sends one chunk of URLs to one engine and *never raises*
for what the engine answers or for a network failure: it returns a
:class:`PostResult` that says whether the chunk was accepted, should be
retried (and after how long), or was finally rejected. The HTTP exchange
itself, bounded in time (one deadline for the whole exchange) and in memory
(only a short prefix of the answer is read), is :mod:`indexnow_django.protocol.http`'s.

:meth:`RetryPolicy.plan` turns the retryable results of an attempt into one
:class:`Retry` per engine (which URLs, after how long): the worker's jobs
schedule them, ``indexnow_submit --sync`` waits for them.
"""

from __future__ import annotations

import enum
import json
import logging
import re
import time
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from typing import TYPE_CHECKING
from urllib.parse import urlsplit

from ..version import __version__
from .http import HTTPSession, NoAnswer
from .masking import mask_keys, mask_url, mask_url_in

if TYPE_CHECKING:
    import requests

__all__ = [
    "ENGINE_ENDPOINTS",
    "MAX_URLS_PER_POST",
    "Engine",
    "IndexNowClient",
    "Outcome",
    "PostResult",
    "Retry",
    "RetryPolicy",
    "endpoint_name",
    "excerpt",
    "parse_retry_after",
    "resolve_engine",
]

logger = logging.getLogger(__name__)

#: The protocol accepts at most 10,000 URLs per POST.
MAX_URLS_PER_POST = 10_000

#: Engines known by name. Any of them shares submissions with the others, but a
#: site may notify several directly.
ENGINE_ENDPOINTS: dict[str, str] = {
    "indexnow": "https://api.indexnow.org/indexnow",
    "bing": "https://www.bing.com/indexnow",
    "yandex": "https://yandex.com/indexnow",
    "naver": "https://searchadvisor.naver.com/indexnow",
    "seznam": "https://search.seznam.cz/indexnow",
    "yep": "https://indexnow.yep.com/indexnow",
}

#: How much of an engine's answer a message quotes.
BODY_EXCERPT_CHARS = 300
#: A dry run lists the URLs of a batch at INFO up to this many, else at DEBUG.
DRY_RUN_LISTED_URLS = 20

USER_AGENT = f"indexnow-django/{__version__} (+https://pypi.org/project/indexnow-django/)"


@dataclass(frozen=True)
class Engine:
    """An engine: a short name for logs and the endpoint it is posted to."""

    name: str
    endpoint: str


def resolve_engine(entry: str) -> Engine:
    """Turn an ``ENGINES`` entry (a known name or an endpoint URL) into an :class:`Engine`.

    Raises ``ValueError`` with a readable message for anything else.
    """
    if not isinstance(entry, str):
        raise ValueError(f"{entry!r} is not a string")
    name = entry.strip().lower()
    if name in ENGINE_ENDPOINTS:
        return Engine(name, ENGINE_ENDPOINTS[name])
    parts = urlsplit(entry.strip())
    if parts.scheme in {"http", "https"} and parts.hostname:
        return Engine(endpoint_name(entry.strip()), entry.strip())
    known = ", ".join(ENGINE_ENDPOINTS)
    raise ValueError(f"{entry!r} is neither a known engine ({known}) nor an http(s) URL")


def endpoint_name(url: str) -> str:
    """The name of an engine given by its endpoint URL, as logs, signals and the history show
    it: the endpoint without its scheme, never its user info, query values masked.

    ``https://bot:s3cret@h:8080/e1?token=abc`` is ``h:8080/e1?token=***``: two endpoints on
    one host are two engines, with two names. An endpoint at the root of its host is
    named by its host (and port) alone.
    """
    parts = urlsplit(url)
    host = parts.netloc.rpartition("@")[2].lower()
    path = "" if parts.path in ("", "/") else parts.path
    return mask_url(f"//{host}{path}" + (f"?{parts.query}" if parts.query else "")).lstrip("/")


class Outcome(str, enum.Enum):
    """What became of one POST."""

    ACCEPTED = "accepted"
    RETRY = "retry"
    REJECTED = "rejected"


@dataclass(frozen=True)
class RetryPolicy:
    """When and how often a retryable answer is tried again (seconds)."""

    max_attempts: int = 3
    base_delay: float = 60
    multiplier: float = 2.0
    max_delay: float = 3600
    server_error_delay: float = 5

    def delay(
        self,
        status: int | None,
        attempt: int,
        retry_after: str | None = None,
        now: float | None = None,
    ) -> float:
        """Seconds to wait before attempt ``attempt + 1``.

        ``Retry-After`` (seconds or an HTTP date) wins when present and valid;
        otherwise ``BASE_DELAY * MULTIPLIER**(attempt-1)`` for 429 and
        ``SERVER_ERROR_DELAY * MULTIPLIER**(attempt-1)`` for everything else.
        Always capped at ``max_delay`` and never negative.
        """
        parsed = parse_retry_after(retry_after, now=now)
        if parsed is None:
            base = self.base_delay if status == 429 else self.server_error_delay
            parsed = base * self.multiplier ** max(attempt - 1, 0)
        return float(max(0.0, min(parsed, self.max_delay)))

    def plan(
        self, results: Iterable[PostResult], attempt: int, now: float | None = None
    ) -> list[Retry]:
        """The next attempt after ``attempt`` for retryable ``results``: one :class:`Retry` per
        engine (endpoint), with the URLs that engine did not take (each once, in order) and
        the longest delay any of its answers asks for.

        Empty when ``attempt`` is already ``max_attempts``: the results are final then.
        """
        if attempt >= self.max_attempts:
            return []
        by_engine: dict[str, list[PostResult]] = {}
        for result in results:
            if result.outcome is Outcome.RETRY:
                by_engine.setdefault(result.engine.endpoint, []).append(result)
        return [
            Retry(
                engine=found[0].engine,
                urls=tuple(dict.fromkeys(url for r in found for url in r.urls)),
                delay=max(self.delay(r.status, attempt, r.retry_after, now) for r in found),
                attempt=attempt + 1,
                results=tuple(found),
            )
            for found in by_engine.values()
        ]


@dataclass(frozen=True)
class Retry:
    """Another attempt for one engine: which URLs, after how many seconds."""

    engine: Engine
    urls: tuple[str, ...]
    delay: float
    #: The number of the attempt this retry is.
    attempt: int
    #: The answers that asked for it (the last attempt's).
    results: tuple[PostResult, ...]


_DELTA_SECONDS = re.compile(r"[0-9]+")


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP date), or ``None``.

    Anything else (``soon``, ``1.5``, a non-ASCII digit such as ``²``, a date
    without a zone) is ``None``: as if the header were absent.
    """
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    if _DELTA_SECONDS.fullmatch(value):
        return float(value)
    try:
        when = parsedate_to_datetime(value)
        if when is None or when.tzinfo is None:
            return None
        current = time.time() if now is None else now
        return max(0.0, when.timestamp() - current)
    except (TypeError, ValueError, IndexError, OverflowError):
        return None


@dataclass(frozen=True)
class PostResult:
    """The outcome of one POST of one chunk to one engine."""

    engine: Engine
    host: str
    urls: tuple[str, ...]
    outcome: Outcome
    #: HTTP status, or ``None`` for a network failure or a timeout.
    status: int | None
    #: A readable account of the answer (quotes the body, truncated).
    message: str
    #: The ``Retry-After`` header the engine sent, if any.
    retry_after: str | None = None
    elapsed: float = 0.0
    #: For a network failure or a timeout: the error's class (``ConnectTimeout``,
    #: ``ConnectionError``, ``DeadlineExceeded``...).
    error: str | None = None
    #: Not sent: ``DRY_RUN`` is on (the outcome says accepted, so nothing retries it).
    dry_run: bool = False

    @property
    def accepted(self) -> bool:
        return self.outcome is Outcome.ACCEPTED

    @property
    def retryable(self) -> bool:
        return self.outcome is Outcome.RETRY


def excerpt(text: str, limit: int = BODY_EXCERPT_CHARS) -> str:
    """``text`` on one line (white space runs made one space), cut to ``limit`` characters."""
    text = " ".join(text.split())
    if len(text) > limit:
        return text[:limit] + "…"
    return text


def classify(status: int, body: str) -> Outcome:
    """Map an HTTP answer to an :class:`Outcome` as the protocol describes it."""
    if status in (200, 202):
        return Outcome.ACCEPTED
    if status == 429 or 500 <= status <= 599:
        return Outcome.RETRY
    if status == 403 and "SiteVerificationNotCompleted" in body:
        # Bing answers so for a while after a new key file appears.
        return Outcome.RETRY
    return Outcome.REJECTED


_REASONS = {
    400: "bad request: invalid format",
    403: "forbidden: the key is not valid (key file not found, or its content does not match)",
    422: "unprocessable: the URLs do not belong to the host, or the key does not match the schema",
    429: "too many requests",
}


class IndexNowClient:
    """Posts chunks of URLs to IndexNow engines. Thread-safe for separate instances only.

    ``timeout`` (seconds) bounds connecting and each read, and the whole POST
    too: an answer that has not arrived whole ``timeout`` seconds after the
    request started (a body trickled byte by byte) is a timeout, retried like
    any other. Only the first :data:`~indexnow_django.protocol.http.MAX_BODY_BYTES` of an answer
    are read.
    """

    def __init__(
        self,
        *,
        timeout: float = 10,
        dry_run: bool = False,
        session: requests.Session | None = None,
        user_agent: str = USER_AGENT,
        keys: Iterable[str] = (),
    ) -> None:
        self.timeout = timeout
        self.dry_run = dry_run
        #: The site's other keys, masked in an answer as the key it was sent is.
        self.keys = tuple(keys)
        self.http = HTTPSession(session)
        self.user_agent = user_agent

    def build_payload(
        self, host: str, key: str, key_location: str | None, urls: Sequence[str]
    ) -> dict[str, object]:
        payload: dict[str, object] = {"host": host, "key": key}
        if key_location:
            payload["keyLocation"] = key_location
        payload["urlList"] = list(urls)
        return payload

    def post(
        self,
        engine: Engine,
        host: str,
        key: str,
        urls: Sequence[str],
        key_location: str | None = None,
    ) -> PostResult:
        """Send one chunk. Never raises for the engine's answer or the network."""
        if len(urls) > MAX_URLS_PER_POST:
            raise ValueError(f"a POST holds at most {MAX_URLS_PER_POST} URLs, got {len(urls)}")
        urls = tuple(urls)
        if self.dry_run:
            _log_dry_run(engine, host, urls)
            return PostResult(
                engine, host, urls, Outcome.ACCEPTED, None, "dry run: not sent", dry_run=True
            )
        payload = self.build_payload(host, key, key_location, urls)
        body = json.dumps(payload).encode("utf-8")
        headers = {
            "Content-Type": "application/json; charset=utf-8",
            "User-Agent": self.user_agent,
        }
        started = time.monotonic()
        try:
            answer = self.http.post(engine.endpoint, body, headers, self.timeout)
        except NoAnswer as failure:
            return self._failed(
                engine, host, urls, started, failure.error, timed_out=failure.timed_out
            )
        elapsed = time.monotonic() - started
        outcome = classify(answer.status, answer.text)
        reason = _REASONS.get(answer.status, answer.reason)
        message = f"{engine.name} answered {answer.status}"
        if reason:
            message += f" ({reason})"
        if answer.text.strip():
            # Masked before it is cut, so that no piece of a secret is left.
            shown = mask_keys(mask_url_in(answer.text, engine.endpoint), [key, *self.keys])
            message += f": {excerpt(shown)}"
        return PostResult(
            engine,
            host,
            urls,
            outcome,
            answer.status,
            message,
            retry_after=answer.headers.get("Retry-After"),
            elapsed=elapsed,
        )

    def _failed(
        self,
        engine: Engine,
        host: str,
        urls: tuple[str, ...],
        started: float,
        exc: Exception,
        *,
        timed_out: bool,
    ) -> PostResult:
        """A POST that got no complete answer: retryable, naming the error's class."""
        error = type(exc).__name__
        if timed_out:
            message = f"{engine.name}: no answer within {self.timeout:g}s (timeout, {error})"
        else:
            detail = excerpt(mask_url_in(str(exc), engine.endpoint))
            message = f"{engine.name}: network error ({error}): {detail}"
        return PostResult(
            engine,
            host,
            urls,
            Outcome.RETRY,
            None,
            message,
            elapsed=time.monotonic() - started,
            error=error,
        )


def _log_dry_run(engine: Engine, host: str, urls: tuple[str, ...]) -> None:
    """What a dry run would have posted: engine, host and every URL.

    Up to :data:`DRY_RUN_LISTED_URLS` URLs are listed at INFO; a longer batch
    gives its count at INFO and its list at DEBUG.
    """
    if len(urls) <= DRY_RUN_LISTED_URLS:
        logger.info(
            "IndexNow dry run: would POST engine=%s host=%s count=%d urls=%s",
            engine.name,
            host,
            len(urls),
            " ".join(urls),
        )
        return
    logger.info(
        "IndexNow dry run: would POST engine=%s host=%s count=%d (URLs listed at DEBUG)",
        engine.name,
        host,
        len(urls),
    )
    logger.debug(
        "IndexNow dry run: URLs engine=%s host=%s count=%d urls=%s",
        engine.name,
        host,
        len(urls),
        " ".join(urls),
    )
