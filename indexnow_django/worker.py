"""The rq worker class that gives every job its own unit of work.

A job that saves tracked objects (one of the site's own jobs, not only ours)
produces URLs like a request does. :class:`Worker` wraps each job it performs
in :func:`indexnow_django.collector.batch`, so those URLs are flushed once,
when the job ends, in the process that ran it (the forked work horse, whose
``os._exit`` would skip any ``atexit`` handler). Enable it with one line::

    RQ = {"WORKER_CLASS": "indexnow_django.worker.Worker"}

:class:`SimpleWorker` is the same for rq's non-forking worker, and
:class:`UnitOfWorkMixin` adds the behaviour to a worker class of your own.
"""

from __future__ import annotations

from typing import Any

from rq.worker import SimpleWorker as RQSimpleWorker
from rq.worker import Worker as RQWorker

from .collector import batch

__all__ = [
    "WORKER_CLASS_LINE",
    "SimpleWorker",
    "UnitOfWorkMixin",
    "Worker",
    "configured_worker_class",
    "is_wired",
]

#: The line of settings that makes ``manage.py rqworker`` flush jobs' URLs.
WORKER_CLASS_LINE = 'RQ = {"WORKER_CLASS": "indexnow_django.worker.Worker"}'


class UnitOfWorkMixin:
    """Runs each job in its own unit of work, flushed when the job ends.

    ``perform_job`` runs in the process that executes the job (the work
    horse). Its signature differs between rq versions (rq 3 adds the
    execution), so the arguments are passed through untouched.
    """

    def perform_job(self, *args: Any, **kwargs: Any) -> bool:
        with batch():
            result: bool = super().perform_job(*args, **kwargs)  # type: ignore[misc]
        return result


class Worker(UnitOfWorkMixin, RQWorker):
    """rq's forking worker, with a unit of work per job."""


class SimpleWorker(UnitOfWorkMixin, RQSimpleWorker):
    """rq's non-forking worker, with a unit of work per job."""


def configured_worker_class() -> tuple[str, type | None]:
    """The worker class ``manage.py rqworker`` uses: its dotted path and the class.

    The class is ``None`` when the path cannot be imported.
    """
    from django.conf import settings
    from django.utils.module_loading import import_string

    value: Any = (getattr(settings, "RQ", None) or {}).get("WORKER_CLASS", RQWorker)
    if isinstance(value, str):
        try:
            return value, import_string(value)
        except ImportError:
            return value, None
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}", value
    return repr(value), None


def is_wired() -> bool:
    """Whether ``manage.py rqworker`` (without ``--worker-class``) gives jobs a unit of work."""
    _, cls = configured_worker_class()
    return cls is not None and issubclass(cls, UnitOfWorkMixin)
