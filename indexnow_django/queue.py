"""Everything rq: the Redis client, the queue, the jobs we put on it and how long rq keeps them.

Every job this package creates goes through here, so that they all follow the
same rules:

* one Redis client per queue configuration and process, with connect and read
  timeouts (:data:`REDIS_TIMEOUT`, or a shorter one for diagnostics) so that a
  Redis that does not answer never holds a request for long
  (:func:`connection`);
* the queue ``QUEUE["NAME"]``, enqueueing at once whatever django-rq's
  ``COMMIT_MODE`` says (:func:`get_queue`);
* a job timeout in whole seconds, rounded up (:func:`job_timeout`), and a
  failed job kept for ``QUEUE["FAILURE_TTL"]`` seconds (:func:`failure_ttl`),
  for delivery jobs and scheduled publications alike;
* a due time rounded *up* to rq's whole seconds (:func:`due_at`), so that a
  job never runs before the moment it was given;
* the ``job.meta`` keys of a delivery job and the batch id they share.

:func:`enqueue_delivery` puts a job of :func:`indexnow_django.jobs.deliver` on
the queue, now or later; :func:`schedule_once` puts any job in rq's scheduled
registry under a given id, once.
"""

from __future__ import annotations

import math
import time
import uuid
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from .conf import IndexNowSettings

if TYPE_CHECKING:
    from redis import Redis
    from rq.job import Job
    from rq.queue import Queue

__all__ = [
    "DELIVERY_FUNC",
    "META_ATTEMPT",
    "META_BATCH_ID",
    "META_FAILED_AT",
    "REDIS_TIMEOUT",
    "connection",
    "due_at",
    "enqueue_delivery",
    "failure_ttl",
    "get_queue",
    "is_delivery",
    "job_timeout",
    "new_batch_id",
    "schedule_once",
]

#: ``job.meta`` keys of a delivery job.
META_BATCH_ID = "indexnow_batch_id"
META_ATTEMPT = "indexnow_attempt"
#: Set on a job that failed (at that attempt): when it runs again it was requeued.
META_FAILED_AT = "indexnow_failed_at_attempt"

#: The dotted path delivery jobs carry. Jobs already in Redis name it: it must
#: stay importable under this path.
DELIVERY_FUNC = "indexnow_django.jobs.deliver"

#: Seconds a call to Redis waits before giving up, unless the queue's own
#: connection settings say otherwise. Without it a Redis host that drops
#: packets (or a frozen server) would hold the request for ever.
REDIS_TIMEOUT = 2.0

_clients: dict[tuple[str, str, float], Redis] = {}


def new_batch_id() -> str:
    """A short random id that a flush, its jobs and their retries share in logs."""
    return uuid.uuid4().hex[:12]


def connection(name: str, *, timeout: float = REDIS_TIMEOUT) -> Redis:
    """The Redis client of ``RQ_QUEUES[name]``, giving up after ``timeout`` seconds.

    One client (and so one connection pool) per queue configuration, timeout
    and process: django-rq makes a new client, and so a new TCP connection,
    for every ``get_queue``. The timeout applies to connecting and to each
    reply, unless the queue's settings set their own. A queue that uses a
    cache's client (``USE_REDIS_CACHE``) is left as it is: it is not ours to
    change. Do not close the client: it is shared.
    """
    from django.conf import settings

    config = getattr(settings, "RQ_QUEUES", {})[name]
    key = (name, repr(sorted(config.items())), float(timeout))
    client = _clients.get(key)
    if client is None:
        import django_rq

        client = django_rq.get_connection(name)
        if "USE_REDIS_CACHE" not in config:
            kwargs = client.connection_pool.connection_kwargs
            for option in ("socket_connect_timeout", "socket_timeout"):
                if kwargs.get(option) is None:
                    kwargs[option] = timeout
        _clients[key] = client
    return client


def get_queue(conf: IndexNowSettings) -> Queue:
    """The django-rq queue ``QUEUE["NAME"]``, enqueueing at once whatever ``COMMIT_MODE`` says."""
    import django_rq

    queue: Queue = django_rq.get_queue(
        conf.queue_name, commit_mode="auto", connection=connection(conf.queue_name)
    )
    return queue


def job_timeout(conf: IndexNowSettings) -> int:
    """``QUEUE["TIMEOUT"]`` in rq's whole seconds, rounded up (never shorter than asked)."""
    return math.ceil(conf.queue_timeout)


def failure_ttl(conf: IndexNowSettings) -> int:
    """Seconds rq keeps a failed job of ours in its failed job registry (rq's default: a year)."""
    return int(conf.queue_failure_ttl)


def due_at(timestamp: float) -> datetime:
    """The aware UTC datetime rq should run a job at, for a POSIX ``timestamp``.

    rq keeps due times in whole seconds and truncates them: rounding up means
    a job never runs before ``timestamp`` (an engine's ``Retry-After``, an
    object's publication).
    """
    return datetime.fromtimestamp(math.ceil(timestamp), tz=timezone.utc)


def job_options(conf: IndexNowSettings) -> dict[str, Any]:
    """The options every job of ours is created with (``Queue.create_job`` names)."""
    return {"timeout": job_timeout(conf), "failure_ttl": failure_ttl(conf)}


def is_delivery(job: Job) -> bool:
    """Whether ``job`` is a delivery job of this package."""
    return bool(job.func_name == DELIVERY_FUNC)


def enqueue_delivery(
    queue: Queue,
    urls: Sequence[str],
    *,
    batch_id: str,
    attempt: int = 1,
    engines: Sequence[str] | None = None,
    force: bool = False,
    delay: float = 0,
    conf: IndexNowSettings,
) -> Job:
    """Put one delivery job on ``queue``, now or in ``delay`` seconds. Raises on Redis errors.

    The job carries plain data only (strings, ints, a bool), so it unpickles
    in any worker, and ``job.meta`` holds the batch id and the attempt. On a
    synchronous queue (``ASYNC: False``) it runs at once and ``delay`` is
    ignored.
    """
    kwargs: dict[str, Any] = {"batch_id": batch_id, "attempt": attempt, "force": bool(force)}
    if engines is not None:
        kwargs["engines"] = [str(engine) for engine in engines]
    plural = "" if len(urls) == 1 else "s"
    options = job_options(conf)
    job: Job = queue.create_job(
        DELIVERY_FUNC,
        args=([str(url) for url in urls],),
        kwargs=kwargs,
        description=f"IndexNow: {len(urls)} URL{plural}, batch {batch_id}, attempt {attempt}",
        meta={META_BATCH_ID: batch_id, META_ATTEMPT: attempt},
        **options,
    )
    if delay > 0 and queue.is_async:
        scheduled: Job = queue.schedule_job(job, due_at(time.time() + delay))
        return scheduled
    enqueued: Job = queue.enqueue_job(job)
    return enqueued


def schedule_once(
    queue: Queue,
    func: Any,
    *,
    args: Sequence[Any],
    job_id: str,
    at: datetime,
    description: str,
    conf: IndexNowSettings,
) -> Job | None:
    """Put a job in rq's scheduled registry at ``at`` under ``job_id``, unless it is there.

    Returns the job, or ``None`` when a job of that id is already scheduled
    (by this process or another one, or it already ran). Raises on Redis errors.
    """
    from rq.exceptions import DuplicateJobError

    if job_id in queue.scheduled_job_registry:
        return None
    job: Job = queue.create_job(
        func, args=tuple(args), job_id=job_id, description=description, **job_options(conf)
    )
    try:
        queue.schedule_job(job, at, unique=True)
    except DuplicateJobError:
        return None
    return job
