"""The report of a test site's pytest run, read by the main run (``tests/sitesuite.py``).

Registered by ``tests/plugin.py`` in the site's own process when
``INDEXNOW_SITE_REPORT`` names a file; writes JSON there when the session ends: the tests it collected
(node id, line, marks) and, for each test it ran, its outcome and failure text.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

import pytest

REPORT = "INDEXNOW_SITE_REPORT"

_collected: list[dict[str, Any]] = []
_results: dict[str, dict[str, Any]] = {}


def pytest_collection_finish(session: pytest.Session) -> None:
    for item in session.items:
        _, line, _ = item.location
        _collected.append(
            {
                "nodeid": item.nodeid,
                "line": line,
                "marks": sorted({mark.name for mark in item.iter_markers()}),
            }
        )


def pytest_runtest_logreport(report: pytest.TestReport) -> None:
    result = _results.setdefault(report.nodeid, {"outcome": "passed", "text": "", "duration": 0.0})
    result["duration"] += report.duration
    if report.outcome == "passed" and not hasattr(report, "wasxfail"):
        return
    outcome = "xpassed" if report.outcome == "passed" else report.outcome
    if hasattr(report, "wasxfail") and report.outcome == "skipped":
        outcome = "xfailed"
    if result["outcome"] == "passed":
        result["outcome"] = outcome if report.when == "call" else f"{outcome} in {report.when}"
    sections = "".join(f"\n--- {title} ---\n{body}" for title, body in report.sections)
    result["text"] += f"[{report.when}] {report.longreprtext}{sections}\n"


def pytest_sessionfinish(session: pytest.Session) -> None:
    path = os.environ.get(REPORT)
    if path:
        Path(path).write_text(json.dumps({"collected": _collected, "results": _results}))
