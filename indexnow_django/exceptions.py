"""Exceptions raised by indexnow_django.

Runtime outcomes derive from :class:`IndexNowError`. A misconfiguration is an
:class:`IndexNowConfigError`, which subclasses Django's ``ImproperlyConfigured``
and deliberately sits outside the runtime family, so that a broad
``except IndexNowError`` around sending can never swallow a broken setting.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.core.exceptions import ImproperlyConfigured

if TYPE_CHECKING:
    from .protocol.client import PostResult

__all__ = [
    "IndexNowConfigError",
    "IndexNowError",
    "RegistrationError",
    "RetriesExhausted",
    "SubmissionRejected",
]


class IndexNowConfigError(ImproperlyConfigured):
    """``settings.INDEXNOW`` (or the wiring around it) is not usable."""


class RegistrationError(IndexNowConfigError):
    """A model was registered twice, or with an invalid ``ModelIndexNow``."""


class IndexNowError(Exception):
    """Base class of everything that can go wrong while submitting URLs."""


class SubmissionRejected(IndexNowError):
    """An engine finally rejected a batch (400, 403, 422, other 4xx).

    ``results`` holds every answer that failed the job, in the order they came:
    each engine's :class:`~indexnow_django.protocol.client.PostResult` (engine, host,
    URLs, status and the answer quoted), the rejections first, then the
    retryable answers that were not retried. ``str()`` gives ``message``, each
    of them, and ``hint`` (what to check next). ``engine``, ``status`` and
    ``host`` are those of the first. ``args`` holds the same text, so that a task
    result that keeps only an exception's arguments (Celery's) keeps the engine's
    answer too.
    """

    def __init__(self, message: str, *, results: Sequence[PostResult] = (), hint: str = "") -> None:
        super().__init__(message)
        self.message = message
        self.results: tuple[PostResult, ...] = tuple(results)
        self.hint = hint
        self.args = (str(self),)

    @property
    def engine(self) -> str | None:
        return self.results[0].engine.name if self.results else None

    @property
    def status(self) -> int | None:
        return self.results[0].status if self.results else None

    @property
    def host(self) -> str | None:
        return self.results[0].host if self.results else None

    def __str__(self) -> str:
        text = self.message
        if self.results:
            text += ": " + "; ".join(_describe(result) for result in self.results)
        if self.hint:
            text += f". {self.hint}"
        return text

    def __reduce__(self) -> tuple[Any, ...]:
        return (self.__class__, (self.message,), {"results": self.results, "hint": self.hint})


def _describe(result: PostResult) -> str:
    """One answer of an engine, on one line: how many URLs of which host, and what it said."""
    plural = "" if len(result.urls) == 1 else "s"
    text = f"{len(result.urls)} URL{plural} for {result.host}: {result.message}"
    if result.retryable:
        text += " (not retried)"
    return text


class RetriesExhausted(IndexNowError):
    """An engine kept answering with a retryable error until ``MAX_ATTEMPTS``."""

    def __init__(self, message: str, *, attempts: int = 0) -> None:
        super().__init__(message)
        self.attempts = attempts
