"""The ``django.tasks`` tasks' stable dotted paths: tasks already enqueued name them.

``indexnow_django.tasks.deliver`` (a delivery), ``indexnow_django.tasks.publish``
(a scheduled publication) and ``indexnow_django.tasks.sweep`` (on django-tasks-db,
the delivery tasks of dead workers sent again), on the configured backend and
queue. With ``DISPATCH: "tasks"`` they are built as Django starts (the app's
``ready()``), so that a backend which registers a task with its worker when the
task is built (Celery's) knows them in a worker that never imports this module;
otherwise when first looked up. This module imports without a tasks framework
and reads no settings at import. Each task that starts leaves its moment for
``indexnow_check`` (whether a worker takes them). The code is django.tasks'
transport's (:mod:`indexnow_django.transports.tasks`).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["FUNCTIONS"]


def _taken() -> None:
    """One of these tasks starts in a worker: say so to ``indexnow_check`` (never raises)."""
    from .conf import get_settings
    from .transports.tasks.enqueue import note_taken

    try:
        conf = get_settings(resolve_hosts=False)
    except Exception:
        return  # the task itself says why
    note_taken(conf)


def deliver(context: Any, urls: list[str], **carried: Any) -> dict[str, Any]:
    """The delivery task: see :func:`indexnow_django.transports.tasks.worker.deliver_task`."""
    from .transports.tasks.worker import deliver_task

    _taken()
    return deliver_task(context, urls, **carried)


def publish(label: str, pk: Any, timestamp: int) -> str:
    """The scheduled publication task: see :func:`indexnow_django.units.scheduling.publish`."""
    from .units.scheduling import publish as publish_now

    _taken()
    return publish_now(label, pk, timestamp)


def sweep() -> dict[str, Any]:
    """The sweep task: see :func:`indexnow_django.transports.tasks.worker.sweep_task`."""
    from .transports.tasks.worker import sweep_task

    return sweep_task()


#: The task functions by name, for :func:`indexnow_django.transports.tasks.enqueue.make_task`.
FUNCTIONS: dict[str, Callable[..., Any]] = {
    "deliver": deliver,
    "publish": publish,
    "sweep": sweep,
}
# The tasks themselves (bound to the backend) are what the module's names give.
del deliver, publish, sweep


def __getattr__(name: str) -> Any:
    """``deliver``, ``publish`` and ``sweep``: the tasks, on the configured backend and
    queue."""
    if name in FUNCTIONS:
        from .conf import get_settings
        from .transports.tasks.enqueue import make_task

        return make_task(name, get_settings(resolve_hosts=False))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
