"""The rq worker class's stable dotted path, for
``RQ = {"WORKER_CLASS": "indexnow_django.worker.Worker"}``.

The code is rq's transport's (:mod:`indexnow_django.transports.rq.worker`, and
what the checks read of it, :mod:`indexnow_django.transports.rq.wiring`).
"""

from __future__ import annotations

from .transports.rq.wiring import (
    SCHEDULER_TAKEOVER_AFTER,
    SETTINGS_FIELD,
    SWEEP_EVERY,
    WORKER_CLASS_LINE,
    configured_worker_class,
    is_wired,
    scheduler_death,
    sweep_every,
)
from .transports.rq.worker import SimpleWorker, UnitOfWorkMixin, Worker

__all__ = [
    "SCHEDULER_TAKEOVER_AFTER",
    "SETTINGS_FIELD",
    "SWEEP_EVERY",
    "WORKER_CLASS_LINE",
    "SimpleWorker",
    "UnitOfWorkMixin",
    "Worker",
    "configured_worker_class",
    "is_wired",
    "scheduler_death",
    "sweep_every",
]
