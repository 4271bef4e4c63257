"""The task frameworks and backends this package works with (see :mod:`indexnow_django.compat`).

:func:`tasks_framework` is a version switch: Django's own ``django.tasks``
(Django 6.0 and later) or the ``django_tasks`` backport (Django 5.2). The
``is_*`` functions tell a backend's kind by its class, for what only some
backends do (run a task as it is enqueued, keep tasks in the database, run them
as rq jobs, hand them to Celery), importing nothing.
"""

from __future__ import annotations

import importlib
import importlib.util
import sys
from dataclasses import dataclass
from typing import Any

__all__ = [
    "TasksFramework",
    "is_celery_backend",
    "is_database_backend",
    "is_immediate_backend",
    "is_rq_backend",
    "tasks_framework",
]


@dataclass(frozen=True)
class TasksFramework:
    """The parts of a tasks framework (``django.tasks`` or ``django_tasks``) used here."""

    #: ``"django.tasks"`` or ``"django_tasks"``.
    name: str
    #: The handler of ``settings.TASKS``: ``backends[alias]`` is a backend.
    backends: Any
    #: The ``TaskResultStatus`` choices.
    status: Any
    #: Every signals module that may announce a task starting and finishing: a
    #: backend built on the backport (django-tasks-rq) sends the backport's
    #: signals even on Django 6.
    signal_modules: tuple[Any, ...]


def tasks_framework() -> TasksFramework | None:
    """``django.tasks`` on Django 6.0+, else the ``django_tasks`` backport; ``None`` without.

    django-tasks-db follows the same rule; django-tasks-rq builds on the
    backport on every Django, and its backends load through either handler.
    """
    if importlib.util.find_spec("django.tasks") is not None:
        name = "django.tasks"
    elif importlib.util.find_spec("django_tasks") is not None:
        name = "django_tasks"
    else:
        return None
    framework = importlib.import_module(name)
    base = importlib.import_module(f"{name}.base")
    signal_modules = [importlib.import_module(f"{name}.signals")]
    if name != "django_tasks" and importlib.util.find_spec("django_tasks") is not None:
        signal_modules.append(importlib.import_module("django_tasks.signals"))
    return TasksFramework(
        name=name,
        backends=framework.task_backends,
        status=base.TaskResultStatus,
        signal_modules=tuple(signal_modules),
    )


def _classes(*paths: str) -> tuple[type, ...]:
    """The classes at ``paths`` (``module:Class``) whose module is imported already: an
    object of one of them exists only once its module is, so nothing is imported here
    (importing a task app's module outside ``INSTALLED_APPS`` would fail)."""
    found: list[type] = []
    for path in paths:
        module, _, name = path.partition(":")
        loaded = sys.modules.get(module)
        cls = getattr(loaded, name, None) if loaded is not None else None
        if isinstance(cls, type):
            found.append(cls)
    return tuple(found)


def is_immediate_backend(task_backend: Any) -> bool:
    """Whether ``task_backend`` runs a task while enqueueing it (the ImmediateBackend)."""
    immediate = _classes(
        "django.tasks.backends.immediate:ImmediateBackend",
        "django_tasks.backends.immediate:ImmediateBackend",
    )
    return isinstance(task_backend, immediate)


def is_database_backend(task_backend: Any) -> bool:
    """Whether ``task_backend`` is django-tasks-db's, whose table the worker side reads."""
    return isinstance(task_backend, _classes("django_tasks_db.backend:DatabaseBackend"))


def is_rq_backend(task_backend: Any) -> bool:
    """Whether ``task_backend`` is django-tasks-rq's: its tasks are rq jobs."""
    return isinstance(task_backend, _classes("django_tasks_rq.backend:RQBackend"))


#: The backends that hand tasks to Celery, by the distribution that ships each.
_CELERY_BACKENDS = {
    "django-tasks-celery": "django_tasks_celery.backend:CeleryBackend",
    "django-tasks-fennel": "django_tasks_fennel.backend:CeleryBackend",
}


def is_celery_backend(task_backend: Any) -> str | None:
    """The distribution (``"django-tasks-celery"``, ``"django-tasks-fennel"``) whose backend
    ``task_backend`` is, when its tasks run on a Celery worker; else ``None``."""
    for distribution, path in _CELERY_BACKENDS.items():
        if isinstance(task_backend, _classes(path)):
            return distribution
    return None
