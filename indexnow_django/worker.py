"""The rq worker class's stable dotted path, for
``RQ = {"WORKER_CLASS": "indexnow_django.worker.Worker"}``.

The code is rq's transport's (:mod:`indexnow_django.transports.rq.worker`, and
what the checks read of it, :mod:`indexnow_django.transports.rq.wiring`).
"""

from __future__ import annotations

from .transports.rq.worker import SimpleWorker, UnitOfWorkMixin, Worker

__all__ = ["SimpleWorker", "UnitOfWorkMixin", "Worker"]
