"""rq's transport's system checks: what a queue needs of the site's settings."""

from __future__ import annotations

from django.apps import apps
from django.core import checks

from ...conf import IndexNowSettings
from ...ops.findings import StopsDelivery
from .wiring import WORKER_CLASS_LINE, configured_worker_class, is_wired

__all__ = ["system_checks"]


def system_checks(conf: IndexNowSettings) -> list[checks.CheckMessage]:
    """``indexnow.W001``: ``RQ["WORKER_CLASS"]`` does not run each job in a unit of work, so
    saves made by jobs are not submitted (or it cannot be imported, so no worker starts:
    :class:`~indexnow_django.ops.findings.StopsDelivery`).
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
