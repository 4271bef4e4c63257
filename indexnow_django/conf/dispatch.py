"""The rules of the settings that a ``DISPATCH`` adds, run by :func:`~indexnow_django.conf.validate`
when ``DISPATCH`` names it: the queue's name in ``RQ_QUEUES`` (``indexnow.E014``), the task
backend in ``TASKS`` (``indexnow.E023``). Settings alone: the transports' code is not
imported to validate them."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Mapping
from typing import Any

from django.conf import settings as django_settings

from ..compat.tasks import tasks_framework
from .declared import Problem

__all__ = ["DISPATCH_RULES"]


def queue_problems(conf: Mapping[str, Any]) -> Iterator[Problem]:
    """``indexnow.E014``: the queue is not in ``RQ_QUEUES`` (``conf``: the merged setting)."""
    name = conf["QUEUE"]["NAME"]
    if isinstance(name, str):
        rq_queues = getattr(django_settings, "RQ_QUEUES", {}) or {}
        if name not in rq_queues:
            yield Problem(
                "indexnow.E014",
                f"INDEXNOW['DISPATCH'] is 'queue' but INDEXNOW['QUEUE']['NAME'] {name!r} "
                "is not in RQ_QUEUES.",
                f"Add {name!r} to RQ_QUEUES, or set INDEXNOW['QUEUE']['NAME'] to one of: "
                f"{', '.join(rq_queues) or '(none configured)'}.",
            )


def tasks_problems(conf: Mapping[str, Any]) -> Iterator[Problem]:
    """``indexnow.E023``: no task framework, or the backend is not in ``TASKS`` (``conf``:
    the merged setting)."""
    backend = conf["TASKS"]["BACKEND"]
    if not isinstance(backend, str):
        return
    framework = tasks_framework()
    if framework is None:
        yield Problem(
            "indexnow.E023",
            "INDEXNOW['DISPATCH'] is 'tasks' but this Django has no django.tasks "
            "(it came with Django 6.0) and the django-tasks backport is not installed.",
            "pip install django-tasks, or use Django 6.0 or later.",
        )
        return
    configured = list(framework.backends.settings)
    if backend not in configured:
        yield Problem(
            "indexnow.E023",
            f"INDEXNOW['DISPATCH'] is 'tasks' but INDEXNOW['TASKS']['BACKEND'] "
            f"{backend!r} is not in settings.TASKS.",
            f"Add {backend!r} to TASKS, or set INDEXNOW['TASKS']['BACKEND'] to one of: "
            f"{', '.join(configured) or '(none configured)'}.",
        )


#: The rules of each ``DISPATCH`` that has some (its merged ``INDEXNOW`` -> problems).
DISPATCH_RULES: dict[str, Callable[[Mapping[str, Any]], Iterator[Problem]]] = {
    "queue": queue_problems,
    "tasks": tasks_problems,
}
