"""The internals of rq this package relies on, in one place (see :mod:`indexnow_django.compat`).

Everything else goes through rq's public API (``Queue.create_job``,
``enqueue_job``, ``schedule_job``, the registries). What is here has none;
each piece names the rq versions it was checked against (2.12 and 3.0) and
why it is needed, and has a test in ``tests/test_compat.py`` that fails,
naming the change, when an rq release changes it:

* :func:`scheduler_died` and :func:`scheduler_running`: ``RQScheduler._process``,
  the process in which rq's worker runs its scheduler (rq restarts a dead one
  only in its 10-minute maintenance);
* :func:`take_over_scheduler_lock`: ``RQScheduler._queue_names``, ``name``,
  ``interval`` and ``get_locking_key``, and that rq's lock key of a queue holds
  the name of the scheduler that serves it, renewed to ``interval + 60``
  seconds (rq never takes the lock of a scheduler that stopped);
* :func:`taken_not_started` and :func:`forget_taken`: ``Queue.intermediate_queue``,
  where rq keeps a job its worker took until it is started (rq only fails such
  a job, in its maintenance; we put a delivery job back);
* :func:`reap_work_horse`: ``Worker._horse_pid``, the process running the
  current job, waited for when rq could not record the job's end;
* :data:`WORKER_HOOKS`: the methods and properties of rq's ``Worker`` that
  :mod:`indexnow_django.transports.rq.worker` overrides, and why.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import Any

__all__ = [
    "WORKER_HOOKS",
    "forget_taken",
    "reap_work_horse",
    "scheduler_died",
    "scheduler_running",
    "take_over_scheduler_lock",
    "taken_not_started",
]

#: rq ``Worker`` members the package's worker class overrides (calling rq's own), and why.
#: Checked against rq 2.12 and 3.0.
WORKER_HOOKS: dict[str, str] = {
    "register_birth": "records the settings fingerprint the worker runs with",
    "work": "knows a burst worker (which starts no scheduler)",
    "perform_job": "runs each job in a unit of work of the package",
    "dequeue_timeout": "(property) wakes the waiting worker every sweep",
    "should_run_maintenance_tasks": "(property) asks for the sweep as well as rq's maintenance",
    "run_maintenance_tasks": "adds the sweep: orphans, scheduler, windows, kept URLs",
    "heartbeat": "rides out a lost Redis",
    "maintain_heartbeats": "rides out a lost Redis while a job runs",
    "set_state": "rides out a lost Redis",
    "dequeue_job_and_maintain_ttl": "waits out a Redis that refuses writes",
    "check_for_suspension": "rides out a lost Redis",
    "execute_job": "rides out a lost Redis at a job's end",
    "redis_workers_keys": "(read) the set of registered workers, to register again",
    "scheduler": "(read) the worker's scheduler, to start it again",
    "queues": "(read) the worker's queues, for the sweep",
}
#: rq 2 only (rq 3 has no such step); overridden where it exists.
WORKER_HOOKS_RQ2 = {"set_current_job_working_time": "rides out a lost Redis while a job runs"}


def scheduler_died(scheduler: Any) -> bool:
    """Whether the scheduler process that an rq worker started has ended since.

    False for a scheduler that never started (another worker holds the lock,
    or a burst worker).
    """
    process = getattr(scheduler, "_process", None)
    return process is not None and not process.is_alive()


def scheduler_running(scheduler: Any) -> bool:
    """Whether the scheduler that an rq worker may start runs in its process now."""
    process = getattr(scheduler, "_process", None)
    return process is not None and process.is_alive()


def take_over_scheduler_lock(
    scheduler: Any, death: Callable[[Any], str | None]
) -> list[tuple[str, str]]:
    """Give ``scheduler`` the lock of each of its queues whose holder has stopped.

    ``death(holder)`` says why a holder (an ``RQScheduler`` read from Redis)
    is not alive, or ``None``; a holder without a record in Redis is gone.
    The lock is renewed for the time rq gives it; ``scheduler.acquire_locks``
    then finds it its own. Returns ``(queue name, former holder)`` pairs.
    """
    from rq.exceptions import SchedulerNotFound
    from rq.scheduler import RQScheduler

    connection = scheduler.connection
    taken: list[tuple[str, str]] = []
    for name in sorted(scheduler._queue_names):
        key = scheduler.get_locking_key(name)
        raw = connection.get(key)
        if raw is None:
            continue
        holder = raw.decode() if isinstance(raw, bytes) else str(raw)
        if holder == scheduler.name:
            continue
        try:
            stopped = death(RQScheduler.fetch(holder, connection)) is not None
        except SchedulerNotFound:
            stopped = True
        ttl = int(scheduler.interval) + 60
        if stopped and _replace_holder(connection, key, holder, scheduler.name, ttl):
            taken.append((name, holder))
    return taken


def _replace_holder(connection: Any, key: str, holder: str, name: str, ttl: int) -> bool:
    """Give the lock ``key`` to ``name`` only if ``holder`` still holds it (a transaction
    watching it): two workers taking over at once cannot both get it."""
    from redis.exceptions import WatchError

    with connection.pipeline() as pipe:
        try:
            pipe.watch(key)
            current = pipe.get(key)
            if (current.decode() if isinstance(current, bytes) else current) != holder:
                return False
            pipe.multi()
            pipe.set(key, name, ex=ttl)
            pipe.execute()
        except WatchError:
            return False
    return True


def taken_not_started(queue: Any) -> list[str]:
    """The ids of the jobs an rq worker took from ``queue`` (its intermediate queue) that rq
    has not recorded as started."""
    started = set(queue.started_job_registry.get_job_ids())
    return [job_id for job_id in queue.intermediate_queue.get_job_ids() if job_id not in started]


def forget_taken(queue: Any, job_id: str) -> None:
    """Take ``job_id`` off ``queue``'s intermediate queue (once it is put back on the queue)."""
    queue.intermediate_queue.remove(job_id)


def reap_work_horse(worker: Any) -> None:
    """Wait for ``worker``'s work horse, if one runs, and forget it (as rq does when it
    records a job's end), so that no process is left behind."""
    horse = int(getattr(worker, "_horse_pid", 0) or 0)
    if horse:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(horse, 0)
        worker._horse_pid = 0
