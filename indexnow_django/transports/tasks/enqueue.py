"""Everything ``django.tasks`` on the enqueueing side, as
:mod:`indexnow_django.transports.rq.queue` is for rq.

With ``DISPATCH: "tasks"`` each flush becomes one task of
``indexnow_django.tasks.deliver`` on ``INDEXNOW["TASKS"]["BACKEND"]`` and its
``QUEUE_NAME`` (:func:`enqueue_parcel`), and a scheduled publication one task
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
import logging
import math
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ...compat.tasks import (
    is_celery_backend,
    is_database_backend,
    is_immediate_backend,
    tasks_framework,
)
from ...conf import IndexNowSettings
from ...sending.parcel import Parcel

if TYPE_CHECKING:
    from ..publication import Publication

logger = logging.getLogger(__name__)

__all__ = [
    "DELIVERY_TASK",
    "PUBLISH_TASK",
    "SWEEP_TASK",
    "TASK_QUEUE_PREFIX",
    "backend",
    "build_tasks",
    "cannot_defer",
    "enqueue_parcel",
    "is_database",
    "make_task",
    "note_taken",
    "publication_key",
    "queue_of",
    "runs_on_enqueue",
    "schedule_publication",
    "worker_marks",
]

#: The start of :attr:`~indexnow_django.models.Delivery.queue` for a POST sent by a
#: delivery task: the row's ``job_id`` is then the task's id, the rest the task's backend
#: alias (the task's runner says so, see :class:`~indexnow_django.sending.parcel.Runner`).
TASK_QUEUE_PREFIX = "task:"

#: The dotted paths tasks carry (a task's ``module_path``). Tasks already enqueued
#: name them: they must stay importable under these paths.
DELIVERY_TASK = "indexnow_django.tasks.deliver"
PUBLISH_TASK = "indexnow_django.tasks.publish"
SWEEP_TASK = "indexnow_django.tasks.sweep"
#: The task functions by name (:data:`indexnow_django.tasks.FUNCTIONS`), handed over as
#: Django starts (:func:`indexnow_django.transports.tasks.build_at_start`): the stable
#: module's functions import the transport, the transport never imports them.
FUNCTIONS: dict[str, Callable[..., Any]] = {}
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


#: The tasks built so far, by backend (the object: settings may replace it), queue and name.
_built: dict[tuple[int, str, str, str], Any] = {}


def make_task(name: str, conf: IndexNowSettings, run_after: datetime.datetime | None = None) -> Any:
    """The task ``name`` (``"deliver"``, ``"publish"``, ``"sweep"``) on ``TASKS["BACKEND"]`` and
    ``QUEUE_NAME``; the backend validates it (a queue it does not serve raises).

    Built once per backend and queue: a backend that registers a task with its
    worker when the ``Task`` object is created (Celery's) does so once.
    """
    task_backend = backend(conf)
    key = (id(task_backend), conf.tasks_backend, conf.tasks_queue, name)
    task = _built.get(key)
    if task is None:
        task = task_backend.task_class(
            func=FUNCTIONS[name],
            backend=conf.tasks_backend,
            queue_name=conf.tasks_queue,
            takes_context=name in _TAKES_CONTEXT,
        )
        _built[key] = task
    return task.using(run_after=run_after) if run_after is not None else task


def build_tasks(conf: IndexNowSettings) -> None:
    """Build the app's tasks on ``TASKS["BACKEND"]`` and ``QUEUE_NAME`` now, as Django starts
    (:meth:`~indexnow_django.apps.IndexNowConfig.ready`): a backend that registers a task
    with its worker when the ``Task`` object is created (django-tasks-celery,
    django-tasks-fennel) then knows them in a worker that never imports
    :mod:`indexnow_django.tasks`. Raises when the backend cannot be loaded."""
    for name in FUNCTIONS:
        make_task(name, conf)


# --------------------------------------------------------------------------- worker marks
#
# Whether a worker takes this app's tasks, on a backend whose queue cannot be read (Celery,
# rq): an enqueue of a task due now leaves the moment in the debounce cache unless one is
# there already (the oldest not yet taken; each process looks at most every MARK_EVERY
# seconds), and each of the app's tasks that starts removes it and leaves its own moment.
# On django-tasks-db the table says it all (see .diagnose).

_MARK_TTL = 7 * 24 * 3600
#: A process leaves the waiting mark at most this often (seconds): a request pays the
#: enqueue and, now and then, one look at the cache; a stopped worker is found that much
#: later at most.
MARK_EVERY = 10.0
#: When this process last left the waiting mark, by key.
_marked: dict[str, float] = {}


def _mark_keys(conf: IndexNowSettings) -> tuple[str, str]:
    base = f"indexnow:tasks:{conf.tasks_backend}:{conf.tasks_queue}"
    return f"{base}:waiting", f"{base}:taken"


def _note_waiting(conf: IndexNowSettings, task_backend: Any) -> None:
    """A task due now was enqueued: keep the moment, unless an older one waits. Never raises."""
    if is_database_backend(task_backend) or is_immediate_backend(task_backend):
        return
    from django.core.cache import caches

    key, now = _mark_keys(conf)[0], time.time()
    if now - _marked.get(key, 0.0) < MARK_EVERY:
        return
    _marked[key] = now
    try:
        caches[conf.debounce_cache].add(key, now, timeout=_MARK_TTL)
    except Exception as exc:
        logger.debug("IndexNow could not mark a waiting task (%s: %s)", type(exc).__name__, exc)


def note_taken(conf: IndexNowSettings) -> None:
    """One of the app's tasks starts in a worker: nothing waits untaken, and a worker took
    one now. Never raises; nothing on django-tasks-db, whose table says it."""
    from django.core.cache import caches

    waiting, taken = _mark_keys(conf)
    try:
        if is_database_backend(backend(conf)):
            return
        cache = caches[conf.debounce_cache]
        cache.set(taken, time.time(), timeout=_MARK_TTL)
        cache.delete(waiting)
    except Exception as exc:
        logger.debug("IndexNow could not mark a task taken (%s: %s)", type(exc).__name__, exc)


def worker_marks(conf: IndexNowSettings) -> tuple[float | None, float | None]:
    """When the oldest task due and not yet taken was enqueued, and when a worker last took
    one of the app's tasks (Unix times, ``None`` when not known). Raises what the cache
    raises."""
    from django.core.cache import caches

    waiting, taken = _mark_keys(conf)
    found = caches[conf.debounce_cache].get_many([waiting, taken])
    return found.get(waiting), found.get(taken)


def queue_of(task_backend: Any, queue_name: str) -> str:
    """The queue a worker of ``task_backend`` must serve for ``queue_name``: Celery's default
    queue where django-tasks-celery leaves ``"default"`` to Celery's routing, else the name."""
    if is_celery_backend(task_backend) == "django-tasks-celery" and queue_name == "default":
        try:
            return str(task_backend._get_celery_app().conf.task_default_queue)
        except Exception:
            return "celery"
    return queue_name


def _due(delay: float) -> datetime.datetime:
    """``delay`` seconds from now, rounded up to a whole second (as rq does): a retry never
    runs before ``Retry-After``."""
    return datetime.datetime.fromtimestamp(math.ceil(time.time() + delay), tz=datetime.timezone.utc)


def enqueue_parcel(parcel: Parcel, *, delay: float = 0, conf: IndexNowSettings) -> str:
    """Enqueue one delivery task carrying ``parcel``, to run now or in ``delay`` seconds;
    return its id.

    Its arguments are plain data (:meth:`~indexnow_django.sending.parcel.Parcel.call`),
    as JSON keeps them. Raises what the backend raises (a database or Redis error, a
    queue it does not serve).
    """
    args, kwargs = parcel.call()
    task = make_task("deliver", conf, _due(delay) if delay > 0 else None)
    result = task.enqueue(*args, **kwargs)
    if delay <= 0:
        _note_waiting(conf, task.get_backend())
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
