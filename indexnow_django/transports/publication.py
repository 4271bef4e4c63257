"""What a scheduled publication carries, whichever transport schedules it: the object and
the moment (:class:`Publication`), and how a moment is rounded for a queue
(:func:`whole_seconds`). Plain data: imports nothing of the package's."""

from __future__ import annotations

import datetime
import hashlib
import math
import re
from dataclasses import dataclass
from typing import Any

__all__ = ["Publication", "whole_seconds"]

_UNSAFE = re.compile(r"[^A-Za-z0-9_-]")


def whole_seconds(when: datetime.datetime) -> int:
    """``when`` as a POSIX timestamp, rounded *up* to a whole second.

    Queues schedule to the second; rounding up means a publication never fires
    before the object is public.
    """
    return math.ceil(when.timestamp())


@dataclass(frozen=True)
class Publication:
    """One object due to become public at one moment: all a scheduled job carries."""

    label: str
    pk: Any
    timestamp: int

    @property
    def at(self) -> datetime.datetime:
        """The moment, as an aware UTC datetime."""
        return datetime.datetime.fromtimestamp(self.timestamp, tz=datetime.timezone.utc)

    @property
    def job_id(self) -> str:
        """``indexnow-publish-<model>-<pk>-<timestamp>-<digest>``, only ``[A-Za-z0-9_-]``.

        The readable part may be shortened or lose characters rq does not
        allow; the digest of the exact three values keeps ids distinct.
        """
        digest = hashlib.sha256(f"{self.label}\n{self.pk!r}\n{self.timestamp}".encode()).hexdigest()
        model = _UNSAFE.sub("_", self.label.lower())
        pk = _UNSAFE.sub("_", str(self.pk))[:40]
        return f"indexnow-publish-{model}-{pk}-{self.timestamp}-{digest[:12]}"

    def __str__(self) -> str:
        return f"model={self.label} pk={self.pk} at={self.at.isoformat()}"
