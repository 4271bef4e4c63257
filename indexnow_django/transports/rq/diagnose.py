"""``indexnow_check``'s findings about rq's transport: the queue and its Redis, the workers
(:mod:`.diagnose_workers`), the jobs waiting, scheduled and failed, what waits in the
outboxes, and whether a delivery fits in a job's timeout."""

from __future__ import annotations

import time
from collections.abc import Sequence
from typing import Any

from django.conf import settings as django_settings

from ...conf import IndexNowSettings
from ...ops.findings import WRITE_PROBE_KEY, Diagnosis, Status
from ...protocol.client import excerpt
from .diagnose_workers import QueueState, worker_class_finding, workers_section

__all__ = ["diagnose"]


def diagnose(diag: Diagnosis, conf: IndexNowSettings) -> list[str]:
    """Add rq's findings to ``diag``; the host names the queue's workers run on."""
    _job_size_section(diag, conf)
    if conf.queue_name not in (getattr(django_settings, "RQ_QUEUES", None) or {}):
        return []  # the settings' checks say so
    state = _queue_section(diag, conf)
    if state is None:
        return []
    workers_section(diag, state, conf)
    worker_class_finding(diag)
    _jobs_section(diag, state, conf)
    return [worker.hostname for worker in state.workers if worker.hostname]


#: How many job ids of a registry are fetched to tell IndexNow jobs from others.
MAX_JOBS_INSPECTED = 500


_OWN_JOB_PREFIX = "indexnow_django."


def _redis_location(conn: Any) -> str:
    """``host:port/db`` (or the socket path, or the sentinel service) of a redis-py client."""
    pool = conn.connection_pool
    kwargs = pool.connection_kwargs
    service = getattr(pool, "service_name", None)
    if service:
        return f"sentinel service {service}/{kwargs.get('db', 0)}"
    if kwargs.get("path"):
        return f"unix:{kwargs['path']}/{kwargs.get('db', 0)}"
    return f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}/{kwargs.get('db', 0)}"


def _is_own_job(func_name: str | None) -> bool:
    return bool(func_name) and str(func_name).startswith(_OWN_JOB_PREFIX)


def _count_own_jobs(queue: Any, job_ids: Sequence[str]) -> int | None:
    """How many of ``job_ids`` are IndexNow jobs; ``None`` when too many to look at."""
    if len(job_ids) > MAX_JOBS_INSPECTED:
        return None
    count = 0
    jobs = queue.job_class.fetch_many(
        list(job_ids), connection=queue.connection, serializer=queue.serializer
    )
    for job in jobs:
        if job is None:
            continue
        try:
            name = job.func_name
        except Exception:
            continue
        if _is_own_job(name):
            count += 1
    return count


def _queue_section(diag: Diagnosis, conf: IndexNowSettings) -> QueueState | None:
    from redis.exceptions import RedisError

    from .queue import connection, get_queue

    name = conf.queue_name
    config = (getattr(django_settings, "RQ_QUEUES", None) or {})[name]
    try:
        conn = connection(name)
        location = _redis_location(conn)
    except Exception as exc:
        diag.add(
            "queue",
            Status.FAIL,
            f"queue {name!r}: RQ_QUEUES[{name!r}] cannot give a Redis connection: {exc}",
            "Check the URL (or HOST/PORT/DB) of this RQ_QUEUES entry.",
            name=name,
            reachable=False,
        )
        return None
    try:
        conn.ping()
        version = conn.info("server").get("redis_version", "?")
    except RedisError as exc:
        diag.add(
            "queue",
            Status.FAIL,
            f"queue {name!r}: Redis at {location} is unreachable: {excerpt(str(exc), 200)}",
            f"Start Redis or fix the URL of RQ_QUEUES[{name!r}]: without it no job can be queued "
            "(flushes then fall back to sending in-process).",
            name=name,
            redis=location,
            reachable=False,
        )
        return None
    diag.add(
        "queue",
        Status.OK,
        f"queue {name!r} on Redis {location}: reachable (Redis {version})",
        name=name,
        redis=location,
        reachable=True,
        redis_version=version,
    )
    _persistence(diag, conn, location)
    _memory(diag, conn, location)
    is_async = config.get("ASYNC", True)
    if is_async is False:
        diag.add(
            "queue",
            Status.WARN,
            f"RQ_QUEUES[{name!r}]['ASYNC'] is False: jobs run synchronously inside the process "
            "that enqueues them (the request)",
            "Leave ASYNC at its default (True) outside tests.",
            is_async=False,
        )
    else:
        diag.add("queue", Status.OK, "ASYNC: jobs run in workers", is_async=True)

    from rq.worker import Worker

    queue = get_queue(conf)
    try:
        workers = list(Worker.all(queue=queue))
    except RedisError as exc:
        diag.add("workers", Status.FAIL, f"workers of queue {name!r} could not be listed: {exc}")
        return None
    return QueueState(queue, conn, workers, is_async is not False)


#: What ``indexnow_check`` says to turn persistence on.
PERSISTENCE_HINT = (
    "Turn on Redis persistence (appendonly yes, or RDB snapshots such as save 3600 1 300 100 "
    "60 10000) and supervise workers so they restart with Redis: see Deployment in the docs."
)


def _persistence(diag: Diagnosis, conn: Any, location: str) -> None:
    """Whether the queue's Redis keeps its data over a restart (scheduled retries live there).

    ``CONFIG GET`` gives the settings; a Redis that refuses it (managed
    services often do) is asked ``INFO persistence``, which shows AOF and the
    snapshots taken since it started.
    """
    from redis.exceptions import RedisError

    lost = "a restart of Redis loses queued jobs, scheduled retries and scheduled publications"
    try:
        save = str(conn.config_get("save").get("save", "")).strip()
        appendonly = str(conn.config_get("appendonly").get("appendonly", "no")).strip()
    except RedisError as exc:
        try:
            info = conn.info("persistence")
        except RedisError:
            info = {}
        if str(info.get("aof_enabled", "0")) == "1":
            diag.add("queue", Status.OK, f"Redis at {location} persists to disk (AOF)")
        elif int(info.get("rdb_saves", 0) or 0) > 0:
            diag.add(
                "queue",
                Status.OK,
                f"Redis at {location} persists to disk (RDB snapshots, "
                f"{info['rdb_saves']} since it started)",
            )
        else:
            diag.add(
                "queue",
                Status.WARN,
                f"Redis at {location} shows no persistence: CONFIG GET is refused "
                f"({excerpt(str(exc), 80)}) and INFO persistence shows no AOF and no snapshot "
                f"since it started; without persistence {lost}",
                PERSISTENCE_HINT,
                persistence=None,
            )
        return
    if appendonly == "yes" or save:
        kinds = [
            name for name, on in (("AOF", appendonly == "yes"), (f"save {save!r}", save)) if on
        ]
        diag.add(
            "queue",
            Status.OK,
            f"Redis at {location} persists to disk ({', '.join(kinds)})",
            persistence=True,
        )
        return
    diag.add(
        "queue",
        Status.WARN,
        f"Redis at {location} has no persistence (save '' and appendonly no): {lost}",
        PERSISTENCE_HINT,
        persistence=False,
    )


#: A key ``indexnow_check`` writes (for a few seconds) to see whether Redis takes writes.


#: Used memory over ``maxmemory`` from which ``indexnow_check`` warns.
MEMORY_WARN_RATIO = 0.9


def _memory(diag: Diagnosis, conn: Any, location: str) -> None:
    """Whether the queue's Redis takes writes, and how close it is to its ``maxmemory``.

    A Redis at ``maxmemory`` with ``maxmemory-policy noeviction`` refuses every
    write: no job can be queued, no retry scheduled, and a worker cannot start
    the job it took. That is a failure, like a Redis that cannot be reached:
    delivery through the queue cannot work (flushes fall back to sending from
    the web process, once and without retries). Above
    :data:`MEMORY_WARN_RATIO` of its ``maxmemory`` it is a warning.
    """
    from redis.exceptions import OutOfMemoryError, RedisError

    try:
        info = conn.info("memory")
    except RedisError:
        info = {}
    used = int(info.get("used_memory") or 0)
    limit = int(info.get("maxmemory") or 0)
    policy = str(info.get("maxmemory_policy") or "?")
    memory = {"used": used, "maxmemory": limit, "policy": policy}
    figures = f"used_memory {_size(used)} of maxmemory {_size(limit)}, maxmemory-policy {policy}"
    try:
        conn.set(WRITE_PROBE_KEY, "1", ex=10)
    except OutOfMemoryError as exc:
        diag.add(
            "queue",
            Status.FAIL,
            f"Redis at {location} refuses writes for memory ({figures}: "
            f"{excerpt(str(exc), 120)}): no job can be queued, no retry scheduled, and "
            "workers cannot start the jobs they take",
            "Raise maxmemory (CONFIG SET maxmemory, and in redis.conf) or free memory on this "
            "Redis (another application's keys; failed jobs are kept QUEUE['FAILURE_TTL'] "
            "seconds). Meanwhile flushes fall back to sending in-process, without retries; "
            "a job a worker took as Redis filled up is put back on the queue once it has room.",
            memory={**memory, "writable": False},
        )
        return
    except RedisError:
        pass  # a user or replica without writes: not this finding's to judge
    if limit and used >= MEMORY_WARN_RATIO * limit:
        diag.add(
            "queue",
            Status.WARN,
            f"Redis at {location} is at {100 * used / limit:.0f}% of its maxmemory ({figures})",
            "At maxmemory, with noeviction, Redis refuses every write (jobs, retries); with "
            "an evicting policy it drops keys, jobs among them. Raise maxmemory or free memory.",
            memory={**memory, "writable": True},
        )
        return
    shown = figures if limit else f"used_memory {_size(used)}, no maxmemory"
    diag.add(
        "queue",
        Status.OK,
        f"Redis at {location} takes writes ({shown})",
        memory={**memory, "writable": True},
    )


def _size(count: int) -> str:
    value = float(count)
    for unit in ("B", "KiB", "MiB"):
        if value < 1024:
            return f"{value:.0f} {unit}" if unit == "B" else f"{value:.1f} {unit}"
        value /= 1024
    return f"{value:.1f} GiB"


def _jobs_section(diag: Diagnosis, state: QueueState, conf: IndexNowSettings) -> None:
    from redis.exceptions import RedisError

    queue = state.queue
    try:
        queued = queue.count
        scheduled_ids = queue.scheduled_job_registry.get_job_ids()
        failed_ids = queue.failed_job_registry.get_job_ids()
        own_scheduled = _count_own_jobs(queue, scheduled_ids)
        own_failed = _count_own_jobs(queue, failed_ids)
    except RedisError as exc:
        diag.add(
            "jobs", Status.WARN, f"job registries of {conf.queue_name!r} could not be read: {exc}"
        )
        return

    def counted(total: int, own: int | None) -> str:
        return f"{total}" if own is None or own == total else f"{total} ({own} IndexNow)"

    diag.add(
        "jobs",
        Status.OK,
        f"queue {conf.queue_name!r}: {queued} queued, {counted(len(scheduled_ids), own_scheduled)} "
        "scheduled",
        queued=queued,
        scheduled=len(scheduled_ids),
        scheduled_indexnow=own_scheduled,
    )
    _overdue(diag, state, conf)
    failed_total = len(failed_ids)
    own = own_failed if own_failed is not None else failed_total
    status = Status.WARN if own else Status.OK
    diag.add(
        "jobs",
        status,
        f"{counted(failed_total, own_failed)} failed job(s) in rq's failed job registry",
        "Each failed IndexNow job holds the engine's answer; fix the cause, then requeue it "
        "(django-rq admin, or rq requeue)."
        if own
        else None,
        failed=failed_total,
        failed_indexnow=own_failed,
    )
    try:
        _coalesce_finding(diag, state, conf)
    except RedisError as exc:
        diag.add("jobs", Status.WARN, f"the rate of delivery jobs could not be read: {exc}")


#: Seconds past its time after which a scheduled job is overdue: a live scheduler moves
#: due jobs to the queue every second or so.
OVERDUE_AFTER = 10.0


def _overdue(diag: Diagnosis, state: QueueState, conf: IndexNowSettings) -> None:
    """Scheduled jobs whose time has passed: no scheduler moves them to the queue."""

    from redis.exceptions import RedisError

    registry = state.queue.scheduled_job_registry
    cutoff = time.time() - OVERDUE_AFTER
    try:
        count = state.connection.zcount(registry.key, 0, cutoff)
        oldest = state.connection.zrangebyscore(registry.key, 0, cutoff, 0, 1, withscores=True)
    except RedisError:
        return
    if not count:
        return
    late = time.time() - oldest[0][1] if oldest else 0.0
    diag.add(
        "jobs",
        Status.WARN,
        f"{count} scheduled job(s) of {conf.queue_name!r} overdue, the oldest by {late:.0f}s: "
        "no scheduler moves them to the queue, so these retries and scheduled submissions "
        "wait",
        f"Start (at least) one worker with the scheduler: python manage.py rqworker "
        f"{conf.queue_name} --with-scheduler",
        overdue=count,
        overdue_seconds=round(late),
    )


#: Delivery jobs a minute from which ``indexnow_check`` suggests ``QUEUE["COALESCE"]``.
COALESCE_FROM_PER_MINUTE = 60


#: URLs waiting in the outbox longer than this many windows (and at least the seconds
#: below) are a warning: a window's job should have sent them.
BACKLOG_WINDOWS = 5


BACKLOG_MIN_SECONDS = 30


#: Hosts and engines shown, longest wait first.
BACKLOG_SHOWN = 20


def _coalesce_finding(diag: Diagnosis, state: QueueState, conf: IndexNowSettings) -> None:
    """Coalesced delivery: what waits in the outboxes, per host and engine, and for how long;
    or whether the rate of jobs calls for coalescing."""
    from .coalesce import backlog, outbox_count
    from .queue import RATE_MINUTES, jobs_per_minute

    queue = state.queue
    if conf.queue_coalesce > 0:
        waiting = outbox_count(queue)
        diag.add(
            "jobs",
            Status.OK,
            f"coalesced delivery: one delivery every {conf.queue_coalesce:g} s, "
            f"{waiting} URL(s) pending",
            pending=waiting,
        )
        stale = max(conf.queue_coalesce * BACKLOG_WINDOWS, BACKLOG_MIN_SECONDS)
        for host, engine, count, waited in backlog(queue, conf)[:BACKLOG_SHOWN]:
            late = waited is not None and waited > stale
            age = "?" if waited is None else f"{waited:.0f} s"
            diag.add(
                "jobs",
                Status.WARN if late else Status.OK,
                f"{count} URL(s) wait for {host} at {engine}, the oldest for {age}",
                (
                    "A window's job sends them: is a worker with the scheduler running "
                    "(rqworker --with-scheduler), and does the throttle hold them back "
                    "(THROTTLE['MAX_REQUESTS_PER_MINUTE'])? The worker's log says which."
                )
                if late
                else None,
                host=host,
                engine=engine,
                waiting=count,
                oldest_seconds=None if waited is None else round(waited, 1),
            )
        return
    rate = jobs_per_minute(queue)
    if rate < COALESCE_FROM_PER_MINUTE:
        return
    diag.add(
        "jobs",
        Status.WARN,
        f"{rate:.0f} delivery jobs a minute over the last {RATE_MINUTES} minutes, each its own "
        "POST per host and engine",
        "Set QUEUE['COALESCE'] back to a few seconds (2, the default): the flushes of every "
        "process within that window become one job and one POST per host and engine, for "
        "that much latency.",
        jobs_per_minute=rate,
    )


#: Seconds an engine is taken to answer when the history has no POST to it yet.
ASSUMED_LATENCY = 0.3


def _latency(engine_name: str) -> tuple[float, bool]:
    """The median time of the last 100 POSTs to the engine in the history, and whether it
    is measured (else :data:`ASSUMED_LATENCY`)."""
    from ...models import Delivery

    try:
        durations = sorted(
            Delivery.objects.filter(engine=engine_name)
            .order_by("-sent_at")
            .values_list("duration", flat=True)[:100]
        )
    except Exception:  # no table yet, no database: the check goes on
        return ASSUMED_LATENCY, False
    if not durations:
        return ASSUMED_LATENCY, False
    return durations[len(durations) // 2], True


def _job_size_section(diag: Diagnosis, conf: IndexNowSettings) -> None:
    """Warn when a flush touching every host takes a delivery job close to its timeout."""
    from ...sending.run import hand_over_after
    from ...sending.send import POST_CONCURRENCY

    hosts = len(conf.hosts)
    latencies = [_latency(engine.name) for engine in conf.engines]
    seconds = sum(latency for latency, _ in latencies) * hosts / POST_CONCURRENCY
    budget = hand_over_after(conf.queue_timeout, conf.http_timeout)
    measured = "measured" if all(known for _, known in latencies) else "assumed"
    each = ", ".join(f"{latency:.2f} s" for latency, _ in latencies)
    what = (
        f"a flush on all {hosts} host(s) is {hosts * len(conf.engines)} POST(s): about "
        f"{seconds:.1f} s, {POST_CONCURRENCY} at a time at {each} each ({measured})"
    )
    if seconds <= budget * 0.8:
        diag.add("engines", Status.OK, f"{what}, within QUEUE['TIMEOUT']", seconds=seconds)
        return
    diag.add(
        "engines",
        Status.WARN,
        f"{what}, close to or over the {budget:.0f} s that a job of QUEUE['TIMEOUT'] "
        f"{conf.queue_timeout:g} s sends for",
        "Such a flush is handed from job to job, each waiting its turn in the queue: "
        f"raise QUEUE['TIMEOUT'] to {seconds / 0.48:.0f} s or more so that one job holds it.",
        seconds=seconds,
        budget=budget,
    )
