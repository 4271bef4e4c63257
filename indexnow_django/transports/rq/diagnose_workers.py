"""``indexnow_check``'s findings about rq's workers: who listens on the queue, with which
settings, and whether a scheduler runs (see :mod:`.diagnose`)."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from ...conf import IndexNowSettings
from ...ops.findings import NO_WORKER_FAILS_AFTER, Diagnosis, Status

__all__ = ["QueueState", "worker_class_finding", "workers_section"]


@dataclass
class QueueState:
    queue: Any
    connection: Any
    workers: list[Any]
    is_async: bool


#: How many workers are listed one by one.
MAX_WORKERS_SHOWN = 10


def workers_section(diag: Diagnosis, state: QueueState, conf: IndexNowSettings) -> None:
    from rq.scheduler import RQScheduler

    from .wiring import SCHEDULER_TAKEOVER_AFTER, SWEEP_EVERY, WORKER_CLASS_LINE

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
        waiting = _waiting_seconds(state)
        if waiting is not None and waiting > NO_WORKER_FAILS_AFTER:
            diag.add(
                "workers",
                Status.FAIL,
                f"no worker listens on queue {name!r} and jobs wait: the oldest for "
                f"{waiting:.0f}s, so nothing is delivered",
                f"Start one: {start_hint} (under a supervisor, so that it comes back)",
                count=0,
                waiting_seconds=round(waiting),
            )
        else:
            waits = "" if waiting is None else f" ({waiting:.0f}s so far)"
            diag.add(
                "workers",
                Status.WARN,
                f"no worker listens on queue {name!r}: jobs wait until one starts{waits}; "
                f"after {NO_WORKER_FAILS_AFTER:.0f}s of waiting this check fails",
                f"Start one: {start_hint}",
                count=0,
                waiting_seconds=None if waiting is None else round(waiting),
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


def _waiting_seconds(state: QueueState) -> float | None:
    """How long the oldest job of the queue has waited (queued, or scheduled and due), or
    ``None`` when nothing waits."""
    from datetime import datetime, timezone

    from redis.exceptions import RedisError
    from rq.job import Job

    ages: list[float] = []
    try:
        head = state.queue.get_job_ids(0, 1)
        due = state.connection.zrangebyscore(
            state.queue.scheduled_job_registry.key, 0, time.time(), 0, 1, withscores=True
        )
    except RedisError:
        return None
    if head:
        try:
            enqueued = Job.fetch(head[0], connection=state.connection).enqueued_at
        except Exception:  # gone meanwhile, or unreadable: it waited at least this long
            enqueued = None
        if isinstance(enqueued, datetime):
            if enqueued.tzinfo is None:
                enqueued = enqueued.replace(tzinfo=timezone.utc)
            ages.append((datetime.now(timezone.utc) - enqueued).total_seconds())
        else:
            ages.append(0.0)
    if due:
        ages.append(time.time() - due[0][1])
    return max(ages) if ages else None


def _worker_settings(diag: Diagnosis, state: QueueState) -> None:
    """Whether the running workers were started with the settings read here.

    Each worker of class :class:`indexnow_django.worker.Worker` records a
    fingerprint of its ``INDEXNOW`` settings when it starts; a worker left
    running after a change goes on with the old ones (``DRY_RUN`` included).
    """
    import json

    from redis.exceptions import RedisError

    from ...conf import settings_fingerprint
    from .wiring import SETTINGS_FIELD

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
        # Jobs this process queues to be sent would be logged, or dropped, by that worker.
        sends_here = here.get("ENABLED") and not here.get("DRY_RUN")
        not_there = there.get("DRY_RUN") is True or there.get("ENABLED") is False
        sends_nothing = bool(sends_here and not_there)
        diag.add(
            "workers",
            Status.FAIL if sends_nothing else Status.WARN,
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
    from .wiring import scheduler_death

    return scheduler_death(scheduler, SCHEDULER_STALE_AFTER)


def worker_class_finding(diag: Diagnosis) -> None:
    """The worker class ``manage.py rqworker`` uses, when the checks found nothing wrong."""
    from .wiring import configured_worker_class

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
