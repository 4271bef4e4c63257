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
  for delivery jobs and scheduled publications alike; a finished delivery job
  and its result kept for ``QUEUE["RESULT_TTL"]`` seconds (none by default:
  at 100 jobs a second rq's 500 seconds are half a gigabyte that nobody reads);
* a due time rounded *up* to rq's whole seconds (:func:`due_at`), so that a
  job never runs before the moment it was given;
* the ``job.meta`` keys of a delivery job and the batch id they share;
* a heartbeat in Redis while a delivery job runs (:func:`heartbeat`), so that
  a job whose whole worker died (killed, or a cold shutdown) is found within
  seconds (:func:`orphaned_jobs`) rather than when rq's own maintenance gives
  up on it, about 13 minutes later.

:func:`enqueue_parcel` puts a job of :func:`indexnow_django.jobs.deliver` on
the queue, now or later; :func:`schedule_once` puts any job in rq's scheduled
registry under a given id, once.
"""

from __future__ import annotations

import contextlib
import logging
import math
import time
from collections.abc import Sequence
from datetime import datetime, timezone
from typing import TYPE_CHECKING, Any

from ...compat.rq import forget_taken, taken_not_started
from ...conf import IndexNowSettings
from ...sending.parcel import Parcel
from ..heartbeat import beating, heartbeat_ttl

if TYPE_CHECKING:
    from redis import Redis
    from rq.job import Job
    from rq.queue import Queue

logger = logging.getLogger(__name__)

__all__ = [
    "DELIVERY_FUNC",
    "META_ATTEMPT",
    "META_BATCH_ID",
    "META_FAILED_AT",
    "REDIS_TIMEOUT",
    "claim_batch_run",
    "connection",
    "count_job",
    "due_at",
    "enqueue_parcel",
    "fail_job",
    "failure_ttl",
    "first_run_of_batch",
    "get_queue",
    "heartbeat",
    "is_parcel_job",
    "job_timeout",
    "jobs_per_minute",
    "orphaned_jobs",
    "parcel_job",
    "retire_job",
    "schedule_once",
    "stranded_jobs",
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


#: The window job of coalesced delivery (:mod:`indexnow_django.transports.rq.coalesce`).
WINDOW_FUNC = "indexnow_django.jobs.deliver_window"


def is_parcel_job(job: Job) -> bool:
    """Whether ``job`` is a delivery job of this package (a window's job included)."""
    return job.func_name in (DELIVERY_FUNC, WINDOW_FUNC)


def parcel_job(queue: Queue, parcel: Parcel, *, conf: IndexNowSettings) -> Job:
    """A delivery job carrying ``parcel`` for ``queue``, not saved yet (see
    :func:`enqueue_parcel`)."""
    args, kwargs = parcel.call()
    plural = "" if len(parcel) == 1 else "s"
    # What it did is in the history; rq keeps nothing of it once done, unless asked.
    options = {**job_options(conf), "result_ttl": conf.queue_result_ttl}
    job: Job = queue.create_job(
        DELIVERY_FUNC,
        args=args,
        kwargs=kwargs,
        description=f"IndexNow: {len(parcel)} URL{plural}, batch {parcel.batch_id}, "
        f"attempt {parcel.attempt}",
        meta={META_BATCH_ID: parcel.batch_id, META_ATTEMPT: parcel.attempt},
        **options,
    )
    return job


def enqueue_parcel(
    queue: Queue, parcel: Parcel, *, delay: float = 0, conf: IndexNowSettings
) -> Job:
    """Put one delivery job carrying ``parcel`` on ``queue``, now or in ``delay`` seconds.
    Raises on Redis errors.

    The job carries plain data only (:meth:`~indexnow_django.sending.parcel.Parcel.call`),
    so it unpickles in any worker, and ``job.meta`` holds the batch id and the attempt.
    On a synchronous queue (``ASYNC: False``) it runs at once and ``delay`` is ignored.
    Each job enqueued now is counted, per minute, for ``indexnow_check``
    (:func:`jobs_per_minute`), in the same round trip.
    """
    job = parcel_job(queue, parcel, conf=conf)
    if delay > 0 and queue.is_async:
        scheduled: Job = queue.schedule_job(job, due_at(time.time() + delay))
        return scheduled
    if not queue.is_async:
        ran: Job = queue.enqueue_job(job)  # runs it here, now
        return ran
    # One round trip: without a pipeline of ours rq registers the queue in one of its own.
    with queue.connection.pipeline() as pipe:
        enqueued: Job = queue.enqueue_job(job, pipeline=pipe)
        count_job(pipe, queue.name)
        pipe.execute()
    return enqueued


#: Minutes of delivery job counts kept for ``indexnow_check``.
RATE_MINUTES = 10


def _rate_key(queue_name: str, minute: int) -> str:
    return f"indexnow:rate:{queue_name}:{minute}"


def count_job(pipe: Any, queue_name: str) -> None:
    """Count one delivery job enqueued now, in ``pipe`` (no round trip of its own)."""
    key = _rate_key(queue_name, int(time.time() // 60))
    pipe.incr(key)
    pipe.expire(key, (RATE_MINUTES + 1) * 60)


def jobs_per_minute(queue: Queue) -> float:
    """Delivery jobs enqueued per minute on ``queue`` over the last :data:`RATE_MINUTES`
    minutes (the current one as far as it has gone)."""
    now = time.time()
    minute = int(now // 60)
    keys = [_rate_key(queue.name, m) for m in range(minute - RATE_MINUTES + 1, minute + 1)]
    counts = [int(value or 0) for value in queue.connection.mget(keys)]
    return sum(counts) / (RATE_MINUTES - 1 + (now % 60) / 60)


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


#: Seconds the mark of a batch's first run is kept: its twin (below) runs within
#: minutes of it, once Redis answers again.
BATCH_RUN_TTL = 3600


def _batch_run_key(batch_id: str) -> str:
    return f"indexnow:batch-ran:{batch_id}"


def first_run_of_batch(job: Job, batch_id: str) -> bool:
    """Mark the first delivery of ``batch_id`` as run by ``job``: ``False`` if another job
    of the batch has run already.

    A flush whose enqueue timed out is kept in the database, and Redis may
    still take its job when it answers again: the job and the one a worker
    makes of the kept row are twins, the first attempt of one batch, and only
    the first of them to run sends. Never raises: a mark that cannot be made
    lets the job send.
    """
    try:
        key = _batch_run_key(batch_id)
        if job.connection.set(key, job.id, nx=True, ex=BATCH_RUN_TTL):
            return True
        holder = job.connection.get(key)
    except Exception as exc:
        logger.warning(
            "IndexNow could not mark batch=%s as run (%s: %s)", batch_id, type(exc).__name__, exc
        )
        return True
    if isinstance(holder, bytes):
        holder = holder.decode()
    return holder is None or holder == job.id


def claim_batch_run(queue: Queue, batch_id: str, holder: str) -> bool:
    """Mark ``batch_id``'s first run as ``holder``'s (a kept row being queued): ``False``
    when a job of the batch ran already (see :func:`first_run_of_batch`)."""
    return bool(queue.connection.set(_batch_run_key(batch_id), holder, nx=True, ex=BATCH_RUN_TTL))


def _heartbeat_key(job_id: str) -> str:
    return f"indexnow:heartbeat:{job_id}"


def heartbeat(job: Job) -> contextlib.AbstractContextManager[None]:
    """Keep a heartbeat of ``job`` in Redis while the block runs (see :func:`orphaned_jobs`).

    It stops soon after the process running the job dies, however it dies. Call it
    only in the process that runs the job. Never raises for Redis.
    """
    key = _heartbeat_key(job.id)
    connection = job.connection
    ttl = heartbeat_ttl()

    def beat() -> None:
        try:
            connection.set(key, "1", ex=ttl)
        except Exception as exc:
            logger.warning(
                "IndexNow heartbeat of job=%s not renewed (%s: %s)", job.id, type(exc).__name__, exc
            )

    return beating(beat)


def orphaned_jobs(queue: Queue) -> list[Job]:
    """The delivery jobs of ``queue`` that rq counts as running but that have no heartbeat.

    Their worker died (SIGKILL, a cold shutdown, a machine gone): rq would
    leave them in its started job registry until its maintenance moves them
    to the failed job registry, and never retry them. A job that started less
    than :func:`~indexnow_django.transports.heartbeat.heartbeat_ttl` seconds ago is
    left alone (it may not have beaten yet). Each orphan is handed to one caller
    only, whichever worker asks first.
    """
    from rq.job import JobStatus

    ids = queue.started_job_registry.get_job_ids()
    if not ids:
        return []
    connection = queue.connection
    recent = time.time() - heartbeat_ttl()
    jobs = [
        job
        for job in queue.job_class.fetch_many(ids, connection=connection)
        if job is not None
        and is_parcel_job(job)
        and job.get_status(refresh=False) == JobStatus.STARTED
        and job.started_at is not None
        and _timestamp(job.started_at) < recent
    ]
    if not jobs:
        return []
    pipe = connection.pipeline(transaction=False)
    for job in jobs:
        pipe.exists(_heartbeat_key(job.id))
    beating = pipe.execute()
    return [
        job
        for job, alive in zip(jobs, beating, strict=True)
        if not alive and connection.set(f"indexnow:orphan:{job.id}", "1", nx=True, ex=3600)
    ]


def stranded_jobs(queue: Queue) -> list[Job]:
    """Put back on ``queue`` the delivery jobs a worker took but never started; return them.

    rq moves a job it dequeues to the queue's intermediate queue and, a moment
    later, to the started job registry. A worker that could not write that
    (Redis out of memory, a connection lost at that moment) leaves the job
    there, neither started nor failed: rq's maintenance fails it a minute later
    at the soonest (it runs every 10 minutes), and never runs it. A job seen
    there, not started, for :func:`heartbeat_ttl` seconds is put back at the
    front of the queue (rq's ``enqueue_job``) by whichever worker claims it
    first; it never ran, so it is no attempt. Raises on Redis errors (a Redis
    still refusing writes: the next look tries again).
    """
    from rq.job import JobStatus

    ids = taken_not_started(queue)
    if not ids:
        return []
    connection = queue.connection
    now = time.time()
    put_back = []
    for job in queue.job_class.fetch_many(ids, connection=connection):
        if job is None or not is_parcel_job(job):
            continue
        if job.get_status(refresh=False) != JobStatus.QUEUED:
            continue
        seen_key = f"indexnow:stranded:{job.id}"
        if connection.set(seen_key, repr(now), nx=True, ex=3600):
            continue  # first seen now: a worker may be about to start it
        seen = connection.get(seen_key)
        if seen is None or now - float(seen) < heartbeat_ttl():
            continue
        if not connection.set(f"indexnow:put-back:{job.id}", "1", nx=True, ex=600):
            continue  # another worker puts it back
        queue.enqueue_job(job, at_front=True)
        forget_taken(queue, job.id)
        connection.delete(seen_key)
        put_back.append(job)
    return put_back


def _timestamp(when: datetime) -> float:
    """rq keeps naive UTC datetimes (or aware ones, depending on the version)."""
    if when.tzinfo is None:
        when = when.replace(tzinfo=timezone.utc)
    return when.timestamp()


def retire_job(job: Job, queue: Queue) -> None:
    """Remove ``job`` (sent again under a new id) from rq: its registries and itself."""
    pipe = queue.connection.pipeline()
    queue.started_job_registry.remove_executions(job, pipeline=pipe)
    pipe.execute()
    job.delete()


def fail_job(job: Job, queue: Queue, message: str, conf: IndexNowSettings) -> None:
    """Move ``job`` (not running any more) to the failed job registry with ``message``."""
    from rq.job import JobStatus
    from rq.results import Result

    ttl = failure_ttl(conf)
    pipe = queue.connection.pipeline()
    job.set_status(JobStatus.FAILED, pipeline=pipe)
    queue.started_job_registry.remove_executions(job, pipeline=pipe)
    queue.failed_job_registry.add(job, ttl=ttl, exc_string=message, pipeline=pipe)
    Result.create_failure(job, ttl, exc_string=message, pipeline=pipe)
    pipe.execute()
