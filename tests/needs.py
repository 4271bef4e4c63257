"""What tests need of ``INDEXNOW`` beyond the shipped defaults the suite runs with.

A test, a class or a module says so with ``@pytest.mark.indexnow(**AT_ONCE)``
(``tests/conftest.py``); the sites' suites (Wagtail, django CMS, the multilingual
site) put it in their settings.
"""

from __future__ import annotations

from typing import Any

#: The tests of what a POST carries and how a delivery is split, whose POSTs go out at
#: once (the throttle's own tests are in ``tests/test_throttle.py``).
UNTHROTTLED: dict[str, Any] = {"THROTTLE": {"MAX_REQUESTS_PER_MINUTE": None}}
#: The tests that look at the POSTs a change makes (``pytest.mark.indexnow(**AT_ONCE)``):
#: each flush sent in process (``DISPATCH: "sync"``) and at once (no throttle), so that
#: the engine has it when the save returns.
AT_ONCE: dict[str, Any] = {"DISPATCH": "sync", **UNTHROTTLED}
#: The tests that follow through a worker the job a flush makes: a job per flush (no
#: coalescing window), kept when finished, and its POSTs sent by that job (the throttle
#: would hand a POST over to a later job).
ONE_JOB: dict[str, Any] = {
    "DISPATCH": "queue",
    "QUEUE": {"COALESCE": 0, "RESULT_TTL": 600},
    **UNTHROTTLED,
}
