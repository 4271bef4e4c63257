"""rq's transport's system checks: what a queue needs of the site's settings."""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from django.apps import apps
from django.conf import settings
from django.core import checks

from ...checks import StopsDelivery
from ...conf import IndexNowSettings, Problem
from .wiring import WORKER_CLASS_LINE, configured_worker_class, is_wired

__all__ = ["settings_problems", "system_checks"]


def system_checks(conf: IndexNowSettings) -> list[checks.CheckMessage]:
    """``indexnow.W001``: ``RQ["WORKER_CLASS"]`` does not run each job in a unit of work, so
    saves made by jobs are not submitted (or it cannot be imported, so no worker starts:
    :class:`~indexnow_django.checks.StopsDelivery`).
    ``indexnow.W005``: ``django_rq`` is not installed, so ``manage.py rqworker`` is missing.
    """
    messages: list[checks.CheckMessage] = []
    if not is_wired():
        path, cls = configured_worker_class()
        problem = "cannot be imported" if cls is None else "does not run each job in a unit of work"
        level = checks.Warning if cls is not None else StopsDelivery
        messages.append(
            level(
                f"INDEXNOW dispatches to a queue but the rq worker class {path!r} {problem}: "
                "URLs that your jobs' saves produce are not submitted.",
                hint=f"Add {WORKER_CLASS_LINE} to your settings, or add "
                "indexnow_django.worker.UnitOfWorkMixin to your own worker class.",
                id="indexnow.W001",
            )
        )
    if not apps.is_installed("django_rq"):
        messages.append(
            StopsDelivery(
                f"INDEXNOW dispatches to queue {conf.queue_name!r} but django_rq is not in "
                "INSTALLED_APPS: manage.py rqworker, which runs the jobs, is not available.",
                hint="Add 'django_rq' to INSTALLED_APPS.",
                id="indexnow.W005",
            )
        )
    return messages


def settings_problems(conf: Mapping[str, Any]) -> Iterator[Problem]:
    """``indexnow.E014``: the queue is not in ``RQ_QUEUES`` (``conf``: the merged setting)."""
    name = conf["QUEUE"]["NAME"]
    if isinstance(name, str):
        rq_queues = getattr(settings, "RQ_QUEUES", {}) or {}
        if name not in rq_queues:
            yield Problem(
                "indexnow.E014",
                f"INDEXNOW['DISPATCH'] is 'queue' but INDEXNOW['QUEUE']['NAME'] {name!r} "
                "is not in RQ_QUEUES.",
                f"Add {name!r} to RQ_QUEUES, or set INDEXNOW['QUEUE']['NAME'] to one of: "
                f"{', '.join(rq_queues) or '(none configured)'}.",
            )
