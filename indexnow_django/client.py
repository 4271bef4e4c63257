"""The IndexNow HTTP client and retry policy. No Django import.

:meth:`IndexNowClient.post` sends one batch to one engine and *never raises*
for what the engine answers or for a network failure: it returns a
:class:`PostResult` that says whether the batch was accepted, should be
retried (and after how long), or was finally rejected.
"""

from __future__ import annotations

import enum
import json
import logging
import time
from collections.abc import Sequence
from dataclasses import dataclass
from email.utils import parsedate_to_datetime
from urllib.parse import urlsplit

import requests

from . import __version__

__all__ = [
    "ENGINE_ENDPOINTS",
    "MAX_BATCH_SIZE",
    "Engine",
    "IndexNowClient",
    "Outcome",
    "PostResult",
    "RetryPolicy",
    "resolve_engine",
]

logger = logging.getLogger(__name__)

#: The protocol accepts at most 10,000 URLs per POST.
MAX_BATCH_SIZE = 10_000

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
        return Engine(parts.netloc.lower(), entry.strip())
    known = ", ".join(ENGINE_ENDPOINTS)
    raise ValueError(f"{entry!r} is neither a known engine ({known}) nor an http(s) URL")


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


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds from a ``Retry-After`` header (delta-seconds or HTTP date), or ``None``."""
    if value is None:
        return None
    value = value.strip()
    if not value:
        return None
    if value.isdigit():
        return float(value)
    try:
        when = parsedate_to_datetime(value)
    except (TypeError, ValueError, IndexError):
        return None
    if when is None or when.tzinfo is None:
        return None
    current = time.time() if now is None else now
    return max(0.0, when.timestamp() - current)


@dataclass(frozen=True)
class PostResult:
    """The outcome of one POST of one batch to one engine."""

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

    @property
    def accepted(self) -> bool:
        return self.outcome is Outcome.ACCEPTED

    @property
    def retryable(self) -> bool:
        return self.outcome is Outcome.RETRY


def _excerpt(text: str) -> str:
    text = " ".join(text.split())
    if len(text) > BODY_EXCERPT_CHARS:
        return text[:BODY_EXCERPT_CHARS] + "…"
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
    """Posts URL batches to IndexNow engines. Thread-safe for separate instances only."""

    def __init__(
        self,
        *,
        timeout: float = 10,
        dry_run: bool = False,
        session: requests.Session | None = None,
        user_agent: str = USER_AGENT,
    ) -> None:
        self.timeout = timeout
        self.dry_run = dry_run
        self.session = session or requests.Session()
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
        """Send one batch. Never raises for the engine's answer or the network."""
        if len(urls) > MAX_BATCH_SIZE:
            raise ValueError(f"a batch holds at most {MAX_BATCH_SIZE} URLs, got {len(urls)}")
        urls = tuple(urls)
        payload = self.build_payload(host, key, key_location, urls)
        if self.dry_run:
            logger.info(
                "IndexNow dry run: would POST engine=%s endpoint=%s host=%s count=%d",
                engine.name,
                engine.endpoint,
                host,
                len(urls),
            )
            return PostResult(engine, host, urls, Outcome.ACCEPTED, None, "dry run: not sent")
        body = json.dumps(payload).encode("utf-8")
        headers = {
            "Content-Type": "application/json; charset=utf-8",
            "User-Agent": self.user_agent,
        }
        started = time.monotonic()
        try:
            response = self.session.post(
                engine.endpoint,
                data=body,
                headers=headers,
                timeout=self.timeout,
                allow_redirects=False,
            )
        except requests.Timeout:
            return PostResult(
                engine,
                host,
                urls,
                Outcome.RETRY,
                None,
                f"{engine.name}: no answer within {self.timeout:g}s (timeout)",
                elapsed=time.monotonic() - started,
            )
        except requests.RequestException as exc:
            return PostResult(
                engine,
                host,
                urls,
                Outcome.RETRY,
                None,
                f"{engine.name}: network error: {_excerpt(str(exc))}",
                elapsed=time.monotonic() - started,
            )
        elapsed = time.monotonic() - started
        try:
            text = response.text
        except Exception:
            text = ""
        outcome = classify(response.status_code, text)
        reason = _REASONS.get(response.status_code, response.reason or "")
        message = f"{engine.name} answered {response.status_code}"
        if reason:
            message += f" ({reason})"
        if text.strip():
            message += f": {_excerpt(text)}"
        return PostResult(
            engine,
            host,
            urls,
            outcome,
            response.status_code,
            message,
            retry_after=response.headers.get("Retry-After"),
            elapsed=elapsed,
        )
