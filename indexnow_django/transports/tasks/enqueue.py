"""Everything ``django.tasks`` on the enqueueing side, as
:mod:`indexnow_django.transports.rq.queue` is for rq.

With ``DISPATCH: "tasks"`` each flush becomes one task of
``indexnow_django.tasks.deliver`` on ``INDEXNOW["TASKS"]["BACKEND"]`` and its
``QUEUE_NAME`` (:func:`enqueue_delivery`), and a scheduled publication one task
of ``indexnow_django.tasks.publish`` with ``run_after`` at its moment
(:func:`schedule_publication`). On django-tasks-db the worker side schedules tasks
of ``indexnow_django.tasks.sweep`` itself (:mod:`.worker`). The framework is
Django's ``django.tasks`` or the ``django_tasks`` backport
(:func:`~indexnow_django.compat.tasks.tasks_framework`).

The task functions live in :mod:`indexnow_django.tasks` and are reached by their
dotted path (as rq reaches a job's function), so that enqueueing imports
nothing of the delivery itself.
"""

from __future__ import annotations

import datetime
import importlib
import logging
import math
import time
from typing import TYPE_CHECKING, Any

from ...compat.tasks import is_database_backend, is_immediate_backend, tasks_framework
from ...conf import IndexNowSettings
from ...delivery.parcel import Parcel

if TYPE_CHECKING:
    from ..base import Publication

logger = logging.getLogger(__name__)

__all__ = [
    "DELIVERY_TASK",
    "PUBLISH_TASK",
    "SWEEP_TASK",
    "backend",
    "cannot_defer",
    "enqueue_delivery",
    "is_database",
    "make_task",
    "publication_key",
    "runs_on_enqueue",
    "schedule_publication",
]

#: The dotted paths tasks carry (a task's ``module_path``). Tasks already enqueued
#: name them: they must stay importable under these paths.
DELIVERY_TASK = "indexnow_django.tasks.deliver"
PUBLISH_TASK = "indexnow_django.tasks.publish"
SWEEP_TASK = "indexnow_django.tasks.sweep"
_TASKS_MODULE = "indexnow_django.tasks"
#: The tasks whose function takes the task's context first.
_TAKES_CONTEXT = {"deliver"}


def backend(conf: IndexNowSettings) -> Any:
    """The backend ``TASKS["BACKEND"]`` names. Raises when it cannot be loaded."""
    framework = tasks_framework()
    if framework is None:
        raise RuntimeError("DISPATCH is 'tasks' but neither django.tasks nor django_tasks exists")
    return framework.backends[conf.tasks_backend]


def runs_on_enqueue(task_backend: Any) -> bool:
    """Whether ``task_backend`` runs a task while enqueueing it (the ImmediateBackend)."""
    return is_immediate_backend(task_backend)


def is_database(task_backend: Any) -> bool:
    """Whether ``task_backend`` is django-tasks-db's, whose table the worker side reads."""
    return is_database_backend(task_backend)


def cannot_defer(conf: IndexNowSettings) -> str | None:
    """Why ``TASKS["BACKEND"]`` cannot delay a task (retries, publications), or ``None``.

    Raises when the backend cannot be loaded.
    """
    task_backend = backend(conf)
    if task_backend.supports_defer:
        return None
    return (
        f"task backend {conf.tasks_backend!r} ({type(task_backend).__name__}) cannot delay "
        "a task (its supports_defer is False)"
    )


def make_task(name: str, conf: IndexNowSettings, run_after: datetime.datetime | None = None) -> Any:
    """The task ``name`` (``"deliver"``, ``"publish"``, ``"sweep"``) on ``TASKS["BACKEND"]`` and
    ``QUEUE_NAME``; the backend validates it (a queue it does not serve raises)."""
    functions = importlib.import_module(_TASKS_MODULE).FUNCTIONS
    task = backend(conf).task_class(
        func=functions[name],
        backend=conf.tasks_backend,
        queue_name=conf.tasks_queue,
        takes_context=name in _TAKES_CONTEXT,
    )
    return task.using(run_after=run_after) if run_after is not None else task


def _due(delay: float) -> datetime.datetime:
    """``delay`` seconds from now, rounded up to a whole second (as rq does): a retry never
    runs before ``Retry-After``."""
    return datetime.datetime.fromtimestamp(math.ceil(time.time() + delay), tz=datetime.timezone.utc)


def enqueue_delivery(parcel: Parcel, *, delay: float = 0, conf: IndexNowSettings) -> str:
    """Enqueue one delivery task carrying ``parcel``, to run now or in ``delay`` seconds;
    return its id.

    Its arguments are plain data (:meth:`~indexnow_django.delivery.parcel.Parcel.call`),
    as JSON keeps them. Raises what the backend raises (a database or Redis error, a
    queue it does not serve).
    """
    args, kwargs = parcel.call()
    task = make_task("deliver", conf, _due(delay) if delay > 0 else None)
    result = task.enqueue(*args, **kwargs)
    return str(result.id)


def publication_key(publication: Publication) -> str:
    """The debounce cache's key that says ``publication``'s task was enqueued."""
    return f"indexnow:publish:{publication.job_id}"


def schedule_publication(publication: Publication, conf: IndexNowSettings) -> str | None:
    """Enqueue ``publication``'s task with ``run_after`` at its moment, once; return its id.

    ``None`` when it was enqueued before (by any process sharing the debounce
    cache: the task's key is kept there until an hour after the moment) or the
    backend cannot defer a task (logged). Raises what the backend raises.
    """
    from django.core.cache import caches

    refusal = cannot_defer(conf)
    if refusal is not None:
        logger.warning(
            "IndexNow cannot schedule the publication %s: %s, so its URLs will not be submitted "
            "at that time (see check indexnow.W003)",
            publication,
            refusal,
        )
        return None
    cache = caches[conf.debounce_cache]
    key = publication_key(publication)
    ttl = max(int(publication.timestamp - time.time()) + 3600, 60)
    if not cache.add(key, "1", timeout=ttl):
        return None
    pk = publication.pk if isinstance(publication.pk, (int, str)) else str(publication.pk)
    try:
        result = make_task("publish", conf, publication.at).enqueue(
            publication.label, pk, publication.timestamp
        )
    except Exception:
        cache.delete(key)
        raise
    return str(result.id)
