"""Exceptions raised by indexnow_django.

Runtime outcomes derive from :class:`IndexNowError`. A misconfiguration is an
:class:`IndexNowConfigError`, which subclasses Django's ``ImproperlyConfigured``
and deliberately sits outside the runtime family, so that a broad
``except IndexNowError`` around sending can never swallow a broken setting.
"""

from __future__ import annotations

from django.core.exceptions import ImproperlyConfigured

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

    The message quotes the engine's answer and says what to check next.
    """

    def __init__(self, message: str, *, engine: str, status: int | None, host: str) -> None:
        super().__init__(message)
        self.engine = engine
        self.status = status
        self.host = host


class RetriesExhausted(IndexNowError):
    """An engine kept answering with a retryable error until ``MAX_ATTEMPTS``."""

    def __init__(self, message: str, *, attempts: int) -> None:
        super().__init__(message)
        self.attempts = attempts
