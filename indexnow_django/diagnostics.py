"""What ``manage.py indexnow_check`` finds: can delivery work with these settings?

:func:`diagnose` gathers :class:`Finding` objects, each marked OK, WARN or
FAIL, grouped in sections (settings, dispatch, queue, workers, engines, hosts
and key files, debounce cache, registered models, jobs). The command prints
them for a person or as JSON for monitoring; delivery can work when there is
no FAIL (warnings allowed).

Everything here only reads: Redis with short socket timeouts, key files with
one ``GET`` each. Nothing is ever posted to an engine, and the key is never
shown in full (:func:`~indexnow_django.conf.mask_key`).
"""

from __future__ import annotations

import enum
import logging
import socket
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any
from urllib.parse import urljoin, urlsplit

import requests
from django.conf import settings as django_settings
from django.core import checks

from .checks import StopsDelivery
from .client import USER_AGENT, excerpt
from .conf import KEY_RE, IndexNowSettings, get_settings, validate
from .exceptions import IndexNowConfigError
from .masking import mask_key, mask_url

logger = logging.getLogger(__name__)

__all__ = [
    "SECTIONS",
    "Diagnosis",
    "Finding",
    "Status",
    "check_key_file",
    "diagnose",
    "network_cause",
]

#: Section ids in the order they are shown, with their titles.
SECTIONS: dict[str, str] = {
    "settings": "Settings",
    "dispatch": "Dispatch",
    "queue": "Queue",
    "tasks": "Task backend",
    "workers": "Workers",
    "engines": "Engines",
    "hosts": "Hosts and key files",
    "debounce": "Debounce cache",
    "models": "Registered models",
    "sites": "Sites (from installed apps, e.g. Wagtail)",
    "jobs": "Jobs",
    "health": "Deliveries per host and engine (from the history)",
}

#: The section of each system check that is not about the settings themselves.
CHECK_SECTIONS: dict[str, str] = {
    "indexnow.W001": "workers",
    "indexnow.W002": "debounce",
    "indexnow.W003": "models",
    "indexnow.W004": "dispatch",
    "indexnow.W005": "dispatch",
    "indexnow.W006": "debounce",
    "indexnow.W007": "hosts",
    "indexnow.W009": "tasks",
    "indexnow.W010": "tasks",
}

#: How many workers are listed one by one.
MAX_WORKERS_SHOWN = 10
#: How many job ids of a registry are fetched to tell IndexNow jobs from others.
MAX_JOBS_INSPECTED = 500
#: How much of a wrong key file is quoted.
EXCERPT_CHARS = 60

_OWN_JOB_PREFIX = "indexnow_django."


class Status(str, enum.Enum):
    OK = "OK"
    WARN = "WARN"
    FAIL = "FAIL"


@dataclass(frozen=True)
class Finding:
    """One line of the report."""

    section: str
    status: Status
    message: str
    hint: str | None = None
    #: Machine-readable details for ``--json``.
    data: Mapping[str, Any] = field(default_factory=dict)

    def as_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = {"status": self.status.value, "message": self.message}
        if self.hint:
            result["hint"] = self.hint
        if self.data:
            result["data"] = dict(self.data)
        return result


@dataclass
class Diagnosis:
    """Every finding of one check, in order.

    Once the settings are known, :attr:`mask` hides every configured key in
    what is added (messages, hints and data), whatever put it there: a key
    file URL, an engine's answer, an exception.
    """

    findings: list[Finding] = field(default_factory=list)
    mask: Callable[[str], str] = field(default=lambda text: text, repr=False)

    def add(
        self,
        section: str,
        status: Status,
        message: str,
        hint: str | None = None,
        **data: Any,
    ) -> Finding:
        mask = self.mask
        finding = Finding(
            section,
            status,
            mask(message),
            mask(hint) if hint else hint,
            {
                name: mask(value) if isinstance(value, str) else value
                for name, value in data.items()
            },
        )
        self.findings.append(finding)
        return finding

    @property
    def failures(self) -> list[Finding]:
        return [f for f in self.findings if f.status is Status.FAIL]

    @property
    def warnings(self) -> list[Finding]:
        return [f for f in self.findings if f.status is Status.WARN]

    @property
    def ok(self) -> bool:
        """Delivery can work: no FAIL (warnings allowed)."""
        return not self.failures

    def by_section(self) -> dict[str, list[Finding]]:
        grouped: dict[str, list[Finding]] = {}
        for section in SECTIONS:
            found = [f for f in self.findings if f.section == section]
            if found:
                grouped[section] = found
        return grouped

    def as_dict(self) -> dict[str, Any]:
        return {
            "ok": self.ok,
            "failures": len(self.failures),
            "warnings": len(self.warnings),
            "sections": [
                {
                    "id": section,
                    "title": SECTIONS[section],
                    "findings": [f.as_dict() for f in found],
                }
                for section, found in self.by_section().items()
            ],
        }


# --------------------------------------------------------------------------- helpers


def _shown(text: str) -> str:
    """Quote what a key file answered, masking it when it looks like a key."""
    stripped = text.strip()
    if KEY_RE.match(stripped):
        return f"a different key ({mask_key(stripped)})"
    if not stripped:
        return "an empty body"
    return repr(excerpt(stripped, EXCERPT_CHARS))


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


# --------------------------------------------------------------------------- key files


def _causes(exc: BaseException) -> Iterator[BaseException]:
    """``exc`` and what it wraps: requests wraps urllib3's error, which wraps the socket's."""
    seen: set[int] = set()
    todo: list[BaseException] = [exc]
    while todo and len(seen) < 20:
        current = todo.pop(0)
        if id(current) in seen:
            continue
        seen.add(id(current))
        yield current
        wrapped = [getattr(current, "reason", None), current.__cause__, current.__context__]
        wrapped.extend(current.args)
        todo.extend(item for item in wrapped if isinstance(item, BaseException))


def network_cause(exc: BaseException, timeout: float) -> str:
    """What went wrong in a request that got no answer, in words (``connection refused``)."""
    import ssl

    causes = list(_causes(exc))

    def found(*kinds: type[BaseException]) -> BaseException | None:
        return next((cause for cause in causes if isinstance(cause, kinds)), None)

    if found(ConnectionRefusedError):
        return "connection refused (nothing listens at that address and port)"
    if found(socket.gaierror):
        return "the host name does not resolve (DNS)"
    if found(requests.Timeout, TimeoutError, socket.timeout):
        return f"no answer within {timeout:g}s (timeout)"
    if found(ConnectionResetError, ConnectionAbortedError):
        return "the connection was reset"
    tls = found(requests.exceptions.SSLError, ssl.SSLError)
    if tls is not None:
        return f"TLS failed ({excerpt(str(tls), 120)})"
    unreachable = found(OSError)
    strerror = getattr(unreachable, "strerror", None)
    if strerror:
        return str(strerror).lower()
    return f"{type(exc).__name__}: {excerpt(str(exc), 160)}"


def check_key_file(
    url: str, key: str, timeout: float
) -> tuple[Status, str, str | None, dict[str, Any]]:
    """Fetch the key file at ``url`` and compare it with ``key``.

    Returns ``(status, message, hint, data)``. Redirects are not followed:
    engines must find the key itself at the URL they are given.
    """
    data: dict[str, Any] = {"url": url}
    offline_hint = "If this machine cannot reach its own public address, run with --offline."
    try:
        response = requests.get(
            url,
            timeout=timeout,
            allow_redirects=False,
            headers={"User-Agent": USER_AGENT, "Accept": "text/plain"},
        )
    except requests.RequestException as exc:
        cause = network_cause(exc, timeout)
        data.update(error=str(exc), cause=cause)
        site = urlsplit(url)
        return (
            Status.FAIL,
            f"key file {url} could not be fetched: {cause}",
            f"Is the site running at {site.scheme}://{site.netloc}? That is where BASE_URL (or "
            "KEY_LOCATION) puts the key file. " + offline_hint,
            data,
        )
    status = response.status_code
    content_type = response.headers.get("Content-Type", "")
    body = response.content[:2048].decode("utf-8", errors="replace").lstrip("\ufeff")
    data.update(http_status=status, content_type=content_type)
    if 300 <= status < 400:
        location = urljoin(url, response.headers.get("Location", ""))
        data["location"] = location
        return (
            Status.FAIL,
            f"key file {url} answered {status}, a redirect to {location}, instead of the key",
            "Engines do not follow redirects to the key file: serve it at this URL, or set "
            "KEY_LOCATION to the final URL (on the same host).",
            data,
        )
    if status != 200:
        return (
            Status.FAIL,
            f"key file {url} answered {status} {response.reason or ''}".rstrip()
            + f" with {_shown(body)}",
            'Add path("", include("indexnow_django.urls")) to your URLconf, or serve the file '
            "at KEY_LOCATION. " + offline_hint,
            data,
        )
    text = body.strip()
    if text == key:
        if "text/plain" not in content_type.lower():
            return (
                Status.WARN,
                f"key file {url}: 200, matches the key, but is served as "
                f"{content_type or 'no type'}",
                "Serve it as text/plain; charset=utf-8.",
                data,
            )
        return Status.OK, f"key file {url}: 200, matches the key", None, data
    if "html" in content_type.lower() or text.lower().startswith(("<!doctype", "<html", "<")):
        return (
            Status.FAIL,
            f"key file {url} answered 200 with an HTML page ({excerpt(text, EXCERPT_CHARS)!r}) "
            "instead of the key",
            "A catch-all route or a front-end fallback answers this URL: put "
            'path("", include("indexnow_django.urls")) before it.',
            data,
        )
    return (
        Status.FAIL,
        f"key file {url} answered 200 with {_shown(body)} instead of the key {mask_key(key)}",
        "The file must contain exactly the key (surrounding whitespace is ignored).",
        data,
    )


# --------------------------------------------------------------------------- sections


def _check_findings(diag: Diagnosis) -> None:
    """The findings of the system checks (``manage.py check``), each in its section.

    Errors fail delivery; warnings are warnings, except those that stop it
    (:class:`~indexnow_django.checks.StopsDelivery`). Checks silenced by
    ``SILENCED_SYSTEM_CHECKS`` are left out here too.
    """
    for message in checks.run_checks(tags=["indexnow"]):
        if message.is_silenced():
            continue
        if message.is_serious() or isinstance(message, StopsDelivery):
            status = Status.FAIL
        elif message.level >= checks.WARNING:
            status = Status.WARN
        else:
            status = Status.OK
        diag.add(
            CHECK_SECTIONS.get(message.id or "", "settings"),
            status,
            f"{message.id}: {message.msg}",
            message.hint,
            id=message.id,
        )


def _settings_section(diag: Diagnosis) -> IndexNowSettings | None:
    """The settings, when they are valid and give a base URL; else ``None``."""
    if validate():
        return None  # the checks' errors say why
    try:
        conf = get_settings()
    except IndexNowConfigError as exc:
        diag.add("settings", Status.FAIL, str(exc))
        return None
    diag.mask = conf.mask
    diag.add(
        "settings",
        Status.OK,
        f"settings.INDEXNOW is valid: key {mask_key(conf.key)}, base URL {conf.base_url}",
        key=mask_key(conf.key),
        base_url=conf.base_url,
    )
    if not conf.enabled:
        diag.add(
            "settings",
            Status.WARN,
            "ENABLED is False: nothing is collected or sent",
            "Remove 'ENABLED': False (or set it to True) where pages should be submitted.",
        )
    if conf.dry_run:
        diag.add(
            "settings",
            Status.WARN,
            "DRY_RUN is True: requests to engines are logged, not sent",
            "Remove 'DRY_RUN': True in production, then restart the workers with the web "
            "processes: a worker goes on with the settings it started with.",
        )
    return conf


def _dispatch_section(diag: Diagnosis, conf: IndexNowSettings) -> str:
    mode = conf.resolved_dispatch
    if conf.dispatch == "auto":
        reason = (
            f"QUEUE['NAME'] {conf.queue_name!r} is in RQ_QUEUES"
            if mode == "queue"
            else f"QUEUE['NAME'] {conf.queue_name!r} is not in RQ_QUEUES"
        )
        message = f"DISPATCH 'auto' resolved to '{mode}' ({reason})"
    else:
        message = f"DISPATCH '{mode}'"
    if mode == "queue":
        message += f": each flush becomes a job on queue {conf.queue_name!r}"
    elif mode == "tasks":
        message += (
            f": each flush becomes a task on backend {conf.tasks_backend!r} "
            f"(queue {conf.tasks_queue!r})"
        )
    else:
        message += (
            ": URLs are sent by the process that changed them, after the response; no retries"
        )
    diag.add("dispatch", Status.OK, message, setting=conf.dispatch, resolved=mode)
    return mode


@dataclass
class _QueueState:
    queue: Any
    connection: Any
    workers: list[Any]
    is_async: bool


def _queue_section(diag: Diagnosis, conf: IndexNowSettings) -> _QueueState | None:
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
    return _QueueState(queue, conn, workers, is_async is not False)


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
WRITE_PROBE_KEY = "indexnow:check:write-probe"
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


def _workers_section(diag: Diagnosis, state: _QueueState, conf: IndexNowSettings) -> None:
    from rq.scheduler import RQScheduler

    from .worker import SCHEDULER_TAKEOVER_AFTER, SWEEP_EVERY, WORKER_CLASS_LINE

    name = conf.queue_name
    if not state.is_async:
        diag.add(
            "workers",
            Status.OK,
            "no worker or scheduler is needed: jobs run inline (ASYNC is False)",
        )
        return
    workers = state.workers
    start_hint = f"python manage.py rqworker {name} --with-scheduler"
    if not workers:
        diag.add(
            "workers",
            Status.WARN,
            f"no worker listens on queue {name!r}: jobs wait until one starts",
            f"Start one: {start_hint}",
            count=0,
        )
    else:
        diag.add(
            "workers",
            Status.OK,
            f"{len(workers)} worker(s) listen on queue {name!r}",
            count=len(workers),
            workers=[
                {"name": w.name, "hostname": w.hostname, "pid": w.pid, "state": w.get_state()}
                for w in workers
            ],
        )
        for worker in workers[:MAX_WORKERS_SHOWN]:
            diag.add(
                "workers",
                Status.OK,
                f"worker {worker.name} on {worker.hostname} (pid {worker.pid}): "
                f"{worker.get_state()}, queues {', '.join(worker.queue_names())}",
            )
        if len(workers) > MAX_WORKERS_SHOWN:
            diag.add("workers", Status.OK, f"… and {len(workers) - MAX_WORKERS_SHOWN} more")
        _worker_settings(diag, state)

    # rq 2.12 and 3.x: the scheduler that serves a queue holds a lock key
    # (``rq:scheduler-lock:<queue>``, under RQ_KEY_PREFIX in rq 3) that expires
    # unless it is renewed, and whose value names it; its metadata hash gives
    # its host and pid.
    lock_key = RQScheduler.get_locking_key(name)
    holder = state.connection.get(lock_key)
    if holder is None:
        if workers:
            hint = (
                f"The {len(workers)} worker(s) of the queue hold no scheduler lock: they were "
                "started without --with-scheduler, or they run rq's own worker class, which "
                "asks for the lock only in its maintenance (every 10 minutes) when the "
                f"scheduler that had it stopped. {WORKER_CLASS_LINE} asks every {SWEEP_EVERY} "
                f"seconds and takes over from a scheduler that stopped. Start with: {start_hint}"
            )
        else:
            hint = f"Start (at least) one worker with --with-scheduler: {start_hint}"
        diag.add(
            "workers",
            Status.WARN,
            f"no scheduler runs for queue {name!r}: retries and scheduled submissions never run",
            hint,
            scheduler=None,
        )
        return
    scheduler_name = holder.decode() if isinstance(holder, bytes) else str(holder)
    where = ""
    details: dict[str, Any] = {"name": scheduler_name}
    try:
        scheduler = RQScheduler.fetch(scheduler_name, state.connection)
    except Exception:
        scheduler = None
    if scheduler is not None:
        details.update(hostname=scheduler.hostname, pid=scheduler.pid)
        where = f" on {scheduler.hostname} (pid {scheduler.pid})"
        dead = _scheduler_death(scheduler)
        if dead:
            diag.add(
                "workers",
                Status.WARN,
                f"no scheduler is alive for queue {name!r}: the scheduler{where} still holds "
                f"its lock but {dead}; retries and scheduled submissions wait until another "
                "one takes the lock",
                f"A worker with {WORKER_CLASS_LINE} and --with-scheduler takes it over within "
                f"{SWEEP_EVERY + SCHEDULER_TAKEOVER_AFTER:.0f} seconds; rq's own worker class "
                "waits for the lock to lapse (a minute) and for its maintenance (up to 10 "
                f"minutes). Keep the workers running under a supervisor: {start_hint}",
                scheduler={**details, "alive": False},
            )
            return
    diag.add(
        "workers",
        Status.OK,
        f"scheduler runs for queue {name!r}{where}",
        scheduler=details,
    )


def _worker_settings(diag: Diagnosis, state: _QueueState) -> None:
    """Whether the running workers were started with the settings read here.

    Each worker of class :class:`indexnow_django.worker.Worker` records a
    fingerprint of its ``INDEXNOW`` settings when it starts; a worker left
    running after a change goes on with the old ones (``DRY_RUN`` included).
    """
    import json

    from redis.exceptions import RedisError

    from .conf import settings_fingerprint
    from .worker import SETTINGS_FIELD

    here = settings_fingerprint()
    try:
        with state.connection.pipeline(transaction=False) as pipeline:
            for worker in state.workers:
                pipeline.hget(worker.key, SETTINGS_FIELD)
            recorded = pipeline.execute()
    except RedisError:
        return
    known: list[tuple[Any, dict[str, Any]]] = []
    for worker, raw in zip(state.workers, recorded, strict=True):
        try:
            there = json.loads(raw) if raw else None
        except ValueError:
            there = None
        if isinstance(there, dict):
            known.append((worker, there))
    others = [(w, there) for w, there in known if there.get("fingerprint") != here["fingerprint"]]
    if not known:
        return
    if not others:
        diag.add(
            "workers",
            Status.OK,
            f"the workers run with these INDEXNOW settings (fingerprint {here['fingerprint']})",
            settings_fingerprint=here["fingerprint"],
        )
        return
    for worker, there in others[:MAX_WORKERS_SHOWN]:
        effects = {
            ("DRY_RUN", True): "it logs instead of sending",
            ("DRY_RUN", False): "it sends to the engines for real",
            ("ENABLED", True): "it collects and sends",
            ("ENABLED", False): "it sends nothing",
        }
        consequence = "".join(
            f"; {name} is {there[name]} there, {here[name]} here: {effects[name, there[name]]}"
            for name in ("DRY_RUN", "ENABLED")
            if (name, there.get(name)) in effects and there[name] != here[name]
        )
        diag.add(
            "workers",
            Status.WARN,
            f"worker {worker.name} on {worker.hostname} (pid {worker.pid}) was started with other "
            f"INDEXNOW settings than these (fingerprint {there.get('fingerprint')} there, "
            f"{here['fingerprint']} here){consequence}",
            "A worker reads the settings when it starts: restart the workers after every change "
            "to the settings (and deploy the same settings to every process).",
            worker=worker.name,
            settings_fingerprint=there.get("fingerprint"),
            expected_fingerprint=here["fingerprint"],
        )
    if len(others) > MAX_WORKERS_SHOWN:
        diag.add(
            "workers",
            Status.WARN,
            f"… and {len(others) - MAX_WORKERS_SHOWN} more worker(s) with other settings",
        )


#: A scheduler whose last heartbeat is older than this (seconds) has stopped.
SCHEDULER_STALE_AFTER = 30.0


def _scheduler_death(scheduler: Any) -> str | None:
    """Why the scheduler that holds a queue's lock is not alive, or ``None`` if it may be.

    Its lock outlives it by up to a minute.
    """
    from .worker import scheduler_death

    return scheduler_death(scheduler, SCHEDULER_STALE_AFTER)


def _worker_class(diag: Diagnosis) -> None:
    """The worker class ``manage.py rqworker`` uses, when the checks found nothing wrong."""
    from .worker import configured_worker_class

    if any(f.data.get("id") == "indexnow.W001" for f in diag.findings):
        return
    path, _ = configured_worker_class()
    diag.add(
        "workers",
        Status.OK,
        f"worker class {path}: URLs that jobs' saves produce are flushed when each job ends",
        worker_class=path,
        wired=True,
    )


def _jobs_section(diag: Diagnosis, state: _QueueState, conf: IndexNowSettings) -> None:
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


def _overdue(diag: Diagnosis, state: _QueueState, conf: IndexNowSettings) -> None:
    """Scheduled jobs whose time has passed: no scheduler moves them to the queue."""
    import time

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


def _coalesce_finding(diag: Diagnosis, state: _QueueState, conf: IndexNowSettings) -> None:
    """Coalesced delivery: what waits in the window, or whether the rate of jobs calls for it."""
    from .coalesce import pending_count
    from .queue import RATE_MINUTES, jobs_per_minute

    queue = state.queue
    if conf.queue_coalesce > 0:
        pending = pending_count(queue)
        diag.add(
            "jobs",
            Status.OK,
            f"coalesced delivery: one delivery every {conf.queue_coalesce:g} s, "
            f"{pending} URL(s) pending",
            pending=pending,
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
        "Set QUEUE['COALESCE'] to a few seconds (5, say): the flushes of every process within "
        "that window become one job and one POST per host and engine, for that much latency.",
        jobs_per_minute=rate,
    )


def _engines_section(diag: Diagnosis, conf: IndexNowSettings) -> None:
    for engine in conf.engines:
        endpoint = mask_url(engine.endpoint)
        diag.add(
            "engines",
            Status.OK,
            f"{mask_url('//' + engine.name).lstrip('/')}: {endpoint}",
            name=engine.name,
            endpoint=endpoint,
        )
    per_minute = conf.throttle_per_minute
    if per_minute is None:
        diag.add(
            "engines",
            Status.OK,
            "throttle: none (THROTTLE['MAX_REQUESTS_PER_MINUTE'] is None)",
            throttle=None,
        )
    else:
        diag.add(
            "engines",
            Status.OK,
            f"throttle: at most {per_minute} POSTs a minute per engine, one every "
            f"{60 / per_minute:g}s, shared through the cache {conf.debounce_cache!r}",
            throttle=per_minute,
        )


#: Seconds an engine is taken to answer when the history has no POST to it yet.
ASSUMED_LATENCY = 0.3


def _latency(engine_name: str) -> tuple[float, bool]:
    """The median time of the last 100 POSTs to the engine in the history, and whether it
    is measured (else :data:`ASSUMED_LATENCY`)."""
    from .models import Delivery

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
    from .jobs import hand_over_after
    from .submitter import POST_CONCURRENCY

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


#: Key files fetched at once by ``indexnow_check``: a site with hundreds of
#: tenant hosts is checked in a few rounds of ``HTTP["TIMEOUT"]`` at most.
KEY_FILE_FETCHES = 32


def _hosts_section(
    diag: Diagnosis, conf: IndexNowSettings, *, offline: bool, timeout: float
) -> None:
    hosts = list(conf.hosts.items())
    fetched: dict[str, Any] = {}
    if not offline and hosts:
        from concurrent.futures import ThreadPoolExecutor

        with ThreadPoolExecutor(
            max_workers=min(KEY_FILE_FETCHES, len(hosts)), thread_name_prefix="indexnow-check"
        ) as pool:
            futures = {
                host: pool.submit(check_key_file, host_conf.key_file_url, host_conf.key, timeout)
                for host, host_conf in hosts
            }
            fetched = {host: future.result() for host, future in futures.items()}
    for host, host_conf in hosts:
        url = host_conf.key_file_url
        diag.add(
            "hosts",
            Status.OK,
            f"{host}: key {mask_key(host_conf.key)}, key file {url}",
            host=host,
            key=mask_key(host_conf.key),
            key_file_url=url,
        )
        if host_conf.previous_keys:
            previous = [mask_key(key) for key in host_conf.previous_keys]
            diag.add(
                "hosts",
                Status.OK,
                f"{host}: previous key(s) {', '.join(previous)}: their key files are still "
                "served, nothing is sent with them (PREVIOUS_KEYS)",
                host=host,
                previous_keys=previous,
            )
        location_host = urlsplit(url).netloc.lower()
        if host_conf.key_location and location_host != host:
            diag.add(
                "hosts",
                Status.WARN,
                f"{host}: the key file is on another host ({location_host}); engines look for it "
                "on the host whose URLs are submitted",
                "Serve the key file on the same host, or leave KEY_LOCATION unset.",
                host=host,
            )
        if offline:
            continue
        status, message, hint, data = fetched[host]
        diag.add("hosts", status, message, hint, host=host, **data)
    if offline:
        diag.add("hosts", Status.OK, "key files not fetched (--offline)")


def _debounce_section(
    diag: Diagnosis, conf: IndexNowSettings, mode: str, state: _QueueState | None
) -> None:
    """The debounce cache; the checks say when it cannot be shared (LocMem, Dummy).

    Only a file-based cache needs the workers' host names to tell.
    """
    from django.core.cache import caches
    from django.core.cache.backends.dummy import DummyCache
    from django.core.cache.backends.filebased import FileBasedCache
    from django.core.cache.backends.locmem import LocMemCache

    alias = conf.debounce_cache
    if conf.debounce_ttl == 0:
        diag.add(
            "debounce",
            Status.OK,
            "debouncing is disabled (DEBOUNCE['TTL'] is 0)",
            cache=alias,
            ttl=0,
        )
        return
    cache = caches[alias]
    backend = f"{type(cache).__module__}.{type(cache).__qualname__}"
    base = f"cache {alias!r} ({backend}), TTL {conf.debounce_ttl}s"
    data: dict[str, Any] = {"cache": alias, "backend": backend, "ttl": conf.debounce_ttl}
    if isinstance(cache, DummyCache):
        diag.add("debounce", Status.OK, f"{base}: stores nothing", shared=False, **data)
        return
    if isinstance(cache, LocMemCache):
        diag.add("debounce", Status.OK, f"{base}: per process", shared=False, **data)
        return
    if isinstance(cache, FileBasedCache):
        here = socket.gethostname()
        elsewhere = sorted(
            {w.hostname for w in (state.workers if state else []) if w.hostname != here}
        )
        if mode == "queue" and elsewhere:
            diag.add(
                "debounce",
                Status.WARN,
                f"{base}: files on {here}, which workers on {', '.join(elsewhere)} cannot share",
                "Point DEBOUNCE['CACHE'] at a cache every process reaches (Redis, Memcached, "
                "the database cache).",
                shared=False,
                **data,
            )
        else:
            diag.add(
                "debounce",
                Status.OK,
                f"{base}: shared by the processes of this machine ({here})",
                shared=True,
                **data,
            )
        return
    diag.add("debounce", Status.OK, f"{base}: shared with workers", shared=True, **data)


def _models_section(diag: Diagnosis) -> None:
    from .tracking import ModelIndexNow, registry

    if not registry:
        diag.add(
            "models",
            Status.WARN,
            "no model is registered: only URLs submitted by hand are sent",
            "Register models in <app>/indexnow.py: @register(Post) above a ModelIndexNow subclass.",
            models=[],
        )
        return
    for model, options in sorted(registry.items(), key=lambda item: item[0]._meta.label):
        fields = getattr(options, "fields", None)
        publish_at = getattr(options, "publish_at", None)
        custom = [
            name
            for name in ("is_published", "urls")
            if getattr(type(options), name, None) is not getattr(ModelIndexNow, name, None)
        ]
        parts = [
            f"fields={', '.join(fields) if fields else 'any'}",
            f"publish_at={publish_at or '-'}",
            f"custom {', '.join(custom)}" if custom else "default is_published and urls",
        ]
        diag.add(
            "models",
            Status.OK,
            f"{model._meta.label} ({type(options).__qualname__}): {'; '.join(parts)}",
            model=model._meta.label,
            options=type(options).__qualname__,
            fields=list(fields) if fields else None,
            publish_at=publish_at,
            custom=custom,
        )


def _contributed_sections(diag: Diagnosis) -> None:
    """Findings of installed apps: an app config's ``indexnow_diagnostics()`` yields
    ``(section, status, message, data)``, e.g. ``indexnow_django.contrib.wagtail``'s sites."""
    from django.apps import apps

    for app_config in apps.get_app_configs():
        source = getattr(app_config, "indexnow_diagnostics", None)
        if source is not None:
            for section, status, message, data in source():
                diag.add(section, Status(status), message, **data)


def _tasks_section(diag: Diagnosis, conf: IndexNowSettings) -> None:
    """The ``django.tasks`` backend: which, whether it defers, and (django-tasks-db) what waits."""
    from .compat import tasks_framework
    from .taskqueue import backend, runs_on_enqueue

    framework = tasks_framework()
    try:
        task_backend = backend(conf)
    except Exception as exc:
        diag.add(
            "tasks",
            Status.FAIL,
            f"task backend {conf.tasks_backend!r} cannot be loaded: {exc}",
            "Fix settings.TASKS (manage.py check lists the backend's own problems).",
            backend=conf.tasks_backend,
        )
        return
    kind = f"{type(task_backend).__module__}.{type(task_backend).__qualname__}"
    defers = bool(task_backend.supports_defer)
    where = "runs each task as it is enqueued" if runs_on_enqueue(task_backend) else "queues tasks"
    diag.add(
        "tasks",
        Status.OK,
        f"backend {conf.tasks_backend!r} ({kind}, {framework.name if framework else '?'}), "
        f"queue {conf.tasks_queue!r}: {where}; "
        + ("defers tasks (retries and scheduled publications run)" if defers else "cannot defer"),
        backend=conf.tasks_backend,
        backend_class=kind,
        queue=conf.tasks_queue,
        supports_defer=defers,
    )
    if type(task_backend).__module__.split(".")[0] == "django_tasks_db":
        _database_tasks(diag, conf, framework)
    elif type(task_backend).__module__.split(".")[0] == "django_tasks_rq":
        diag.add(
            "tasks",
            Status.OK,
            "the tasks are rq jobs: run "
            f"python manage.py rqworker {conf.tasks_queue} --with-scheduler "
            "--job-class django_tasks_rq.Job",
        )


def _database_tasks(diag: Diagnosis, conf: IndexNowSettings, framework: Any) -> None:
    """What waits in django-tasks-db's table: delivery and publication tasks by state."""
    from django.db import DatabaseError
    from django.db.models import Count, Min, Q
    from django.utils import timezone
    from django_tasks_db.models import DBTaskResult

    from .taskqueue import DELIVERY_TASK, PUBLISH_TASK

    status = framework.status
    now = timezone.now()
    ours = DBTaskResult.objects.filter(
        backend_name=conf.tasks_backend, task_path__in=[DELIVERY_TASK, PUBLISH_TASK]
    )
    ready = Q(status=status.READY)
    try:
        counts = ours.aggregate(
            due=Count("pk", filter=ready & Q(run_after__lte=now)),
            oldest_due=Min("enqueued_at", filter=ready & Q(run_after__lte=now)),
            later=Count("pk", filter=ready & Q(run_after__gt=now) & ~Q(run_after__year=9999)),
            running=Count("pk", filter=Q(status=status.RUNNING)),
            failed=Count("pk", filter=Q(status=status.FAILED)),
        )
        # A task enqueued without run_after waits with the backend's far-future marker.
        counts["due"] += ours.filter(ready, run_after__year=9999).count()
    except DatabaseError as exc:
        diag.add(
            "tasks",
            Status.WARN,
            f"the tasks in the database could not be read: {excerpt(str(exc), 120)}",
            "Run manage.py migrate.",
        )
        return
    worker = f"python manage.py db_worker --backend {conf.tasks_backend} --queue-name "
    worker += conf.tasks_queue
    message = (
        f"tasks of this app: {counts['due']} waiting to run, {counts['later']} scheduled "
        f"(retries, publications), {counts['running']} running, {counts['failed']} failed"
    )
    data = {k: v for k, v in counts.items() if k != "oldest_due"}
    oldest = counts["oldest_due"]
    if counts["due"] and oldest is not None and (now - oldest).total_seconds() > 60:
        diag.add(
            "tasks",
            Status.WARN,
            f"{message}; the oldest waits since {(now - oldest).total_seconds():.0f}s",
            f"Is a worker running? {worker}",
            **data,
        )
    else:
        diag.add("tasks", Status.OK, f"{message}; workers: {worker}", **data)


def _pending_section(diag: Diagnosis, conf: IndexNowSettings) -> None:
    """URLs kept in the database because no queue could take them (see :mod:`.pending`)."""
    from django.db import DatabaseError
    from django.db.models import Count, Min
    from django.utils import timezone

    from .pending import PendingSubmission

    table = PendingSubmission._meta.db_table
    try:
        rows = PendingSubmission.objects.aggregate(count=Count("pk"), oldest=Min("kept_at"))
    except DatabaseError as exc:
        diag.add(
            "jobs",
            Status.WARN,
            f"the submissions waiting in the database (table {table}) could not be read: "
            f"{excerpt(str(exc), 120)}",
            "Run manage.py migrate.",
        )
        return
    count = rows["count"]
    if not count:
        diag.add("jobs", Status.OK, f"no URLs wait in the database (table {table})", pending=0)
        return
    age = (timezone.now() - rows["oldest"]).total_seconds()
    diag.add(
        "jobs",
        Status.WARN,
        f"{count} submission(s) wait in the database (table {table}, the oldest kept "
        f"{age:.0f}s ago): URLs that no queue could take and the web process could not "
        "deliver",
        "A worker of class indexnow_django.worker.Worker queues them once Redis takes jobs: "
        f"python manage.py rqworker {conf.queue_name} --with-scheduler",
        pending=count,
    )


def diagnose(*, offline: bool = False, http_timeout: float | None = None) -> Diagnosis:
    """Check everything delivery depends on; see the module docstring."""
    diag = Diagnosis()
    conf = _settings_section(diag)
    _check_findings(diag)
    if conf is None:
        return diag
    mode = _dispatch_section(diag, conf)
    state: _QueueState | None = None
    rq_queues = getattr(django_settings, "RQ_QUEUES", None) or {}
    if mode == "queue" and conf.queue_name in rq_queues:
        state = _queue_section(diag, conf)
        if state is not None:
            _workers_section(diag, state, conf)
            _worker_class(diag)
    elif mode == "tasks":
        _tasks_section(diag, conf)
    elif mode == "sync":
        diag.add("queue", Status.OK, "no queue is used (sync dispatch)")
    _engines_section(diag, conf)
    if mode == "queue":
        _job_size_section(diag, conf)
    timeout = http_timeout if http_timeout is not None else conf.http_timeout
    _hosts_section(diag, conf, offline=offline, timeout=timeout)
    _debounce_section(diag, conf, mode, state)
    _models_section(diag)
    _contributed_sections(diag)
    if state is not None:
        _jobs_section(diag, state, conf)
    _pending_section(diag, conf)
    from .health import findings

    for level, message, hint, data in findings(conf):
        diag.add("health", Status(level), message, hint, **data)
    return diag
