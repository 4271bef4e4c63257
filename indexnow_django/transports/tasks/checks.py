"""django.tasks' transport's system checks: what ``DISPATCH: "tasks"`` needs of its backend."""

from __future__ import annotations

from django.core import checks

from ...conf import IndexNowSettings
from ...ops.findings import StopsDelivery
from .enqueue import backend, cannot_defer

__all__ = ["system_checks"]


def system_checks(conf: IndexNowSettings) -> list[checks.CheckMessage]:
    """What ``DISPATCH: "tasks"`` needs of its ``django.tasks`` backend.

    ``indexnow.W009``: the backend cannot defer a task (the ImmediateBackend):
    retries and scheduled publications do not run there.
    ``indexnow.W010``: the backend cannot be loaded, or does not serve
    ``TASKS["QUEUE_NAME"]``, so every flush falls back to a send from the web
    process (:class:`~indexnow_django.ops.findings.StopsDelivery`).
    """
    try:
        task_backend = backend(conf)
    except Exception as exc:
        return [
            StopsDelivery(
                f"INDEXNOW dispatches to task backend {conf.tasks_backend!r}, which cannot be "
                f"loaded ({type(exc).__name__}: {exc}): every flush is sent from the process "
                "that made it, without retries.",
                hint="Fix settings.TASKS (manage.py check lists the backend's own problems).",
                id="indexnow.W010",
            )
        ]
    messages: list[checks.CheckMessage] = []
    queues = getattr(task_backend, "queues", None)
    if queues and conf.tasks_queue not in queues:
        messages.append(
            StopsDelivery(
                f"INDEXNOW['TASKS']['QUEUE_NAME'] {conf.tasks_queue!r} is not a queue of task "
                f"backend {conf.tasks_backend!r}: every flush is sent from the process that "
                "made it, without retries.",
                hint=f"Use one of: {', '.join(sorted(queues))}, or add {conf.tasks_queue!r} to "
                f"the backend's QUEUES.",
                id="indexnow.W010",
            )
        )
    refusal = cannot_defer(conf)
    if refusal is not None:
        messages.append(
            checks.Warning(
                f"INDEXNOW dispatches to tasks but {refusal}: retries and scheduled "
                "publications do not run there (a 429 or a 5xx is not sent again).",
                hint="Use a backend that runs tasks later in a worker, such as django-tasks-db's "
                "DatabaseBackend with manage.py db_worker.",
                id="indexnow.W009",
            )
        )
    return messages
