"""What ``manage.py indexnow_check`` reports: findings, each OK, WARN or FAIL, in sections.

:class:`Diagnosis` gathers them (:mod:`indexnow_django.ops.diagnostics` and each transport's
own sections, :meth:`indexnow_django.transports.Transport.diagnose`); the command prints
them for a person or as JSON for monitoring.
"""

from __future__ import annotations

import enum
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from django.core import checks

from ..conf import KEY_RE
from ..protocol.client import excerpt
from ..protocol.masking import mask_key

__all__ = [
    "CHECK_SECTIONS",
    "EXCERPT_CHARS",
    "NO_WORKER_FAILS_AFTER",
    "SECTIONS",
    "WRITE_PROBE_KEY",
    "Diagnosis",
    "Finding",
    "Status",
    "StopsDelivery",
    "shown",
]

#: Seconds work may wait with no worker taking it before ``indexnow_check`` fails.
NO_WORKER_FAILS_AFTER = 60.0

#: A key ``indexnow_check`` reads or writes to tell whether a cache or Redis answers.
WRITE_PROBE_KEY = "indexnow:check:write-probe"


#: Section ids in the order they are shown, with their titles.
SECTIONS: dict[str, str] = {
    "settings": "Settings",
    "dispatch": "Dispatch",
    "queue": "Queue",
    "tasks": "Task backend",
    "workers": "Workers",
    "engines": "Engines",
    "hosts": "Hosts and key files",
    "debounce": "Debounce cache",
    "models": "Registered models",
    "sites": "Sites (from installed apps, e.g. Wagtail)",
    "jobs": "Jobs",
    "health": "Deliveries per host and engine (from the history)",
}


#: The section of each system check that is not about the settings themselves.
CHECK_SECTIONS: dict[str, str] = {
    "indexnow.W001": "workers",
    "indexnow.W002": "debounce",
    "indexnow.W003": "models",
    "indexnow.W004": "dispatch",
    "indexnow.W005": "dispatch",
    "indexnow.W006": "debounce",
    "indexnow.W007": "hosts",
    "indexnow.W009": "tasks",
    "indexnow.W010": "tasks",
}


#: How much of a wrong key file is quoted.
EXCERPT_CHARS = 60


class StopsDelivery(checks.Warning):
    """A warning to ``manage.py check`` (the site itself runs) that stops delivery.

    ``indexnow_check`` reports it as a failure: jobs are queued but can never run.
    """


class Status(str, enum.Enum):
    OK = "OK"
    WARN = "WARN"
    FAIL = "FAIL"


@dataclass(frozen=True)
class Finding:
    """One line of the report."""

    section: str
    status: Status
    message: str
    hint: str | None = None
    #: Machine-readable details for ``--json``.
    data: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = {"status": self.status.value, "message": self.message}
        if self.hint:
            result["hint"] = self.hint
        if self.data:
            result["data"] = dict(self.data)
        return result


@dataclass
class Diagnosis:
    """Every finding of one check, in order.

    Once the settings are known, :attr:`mask` hides every configured key in
    what is added (messages, hints and data), whatever put it there: a key
    file URL, an engine's answer, an exception.
    """

    findings: list[Finding] = field(default_factory=list)
    mask: Callable[[str], str] = field(default=lambda text: text, repr=False)

    def add(
        self,
        section: str,
        status: Status,
        message: str,
        hint: str | None = None,
        **data: Any,
    ) -> Finding:
        mask = self.mask
        finding = Finding(
            section,
            status,
            mask(message),
            mask(hint) if hint else hint,
            {
                name: mask(value) if isinstance(value, str) else value
                for name, value in data.items()
            },
        )
        self.findings.append(finding)
        return finding

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if f.status is Status.FAIL]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.status is Status.WARN]

    @property
    def ok(self) -> bool:
        """Delivery can work: no FAIL (warnings allowed)."""
        return not self.failures

    def by_section(self) -> dict[str, list[Finding]]:
        grouped: dict[str, list[Finding]] = {}
        for section in SECTIONS:
            found = [f for f in self.findings if f.section == section]
            if found:
                grouped[section] = found
        return grouped

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "failures": len(self.failures),
            "warnings": len(self.warnings),
            "sections": [
                {
                    "id": section,
                    "title": SECTIONS[section],
                    "findings": [f.as_dict() for f in found],
                }
                for section, found in self.by_section().items()
            ],
        }


def shown(text: str) -> str:
    """Quote what a key file answered, masking it when it looks like a key."""
    stripped = text.strip()
    if KEY_RE.fullmatch(stripped):
        return f"a different key ({mask_key(stripped)})"
    if not stripped:
        return "an empty body"
    return repr(excerpt(stripped, EXCERPT_CHARS))
