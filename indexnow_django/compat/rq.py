"""The internals of rq this package relies on, one function each (see
:mod:`indexnow_django.compat`).

Each has a test in ``tests/test_compat.py`` that fails, naming the change, when
an rq release changes the internal it reads:

* :func:`scheduler_died` and :func:`scheduler_running`: ``RQScheduler._process``,
  the process in which rq's worker runs its scheduler;
* :func:`take_over_scheduler_lock`: ``RQScheduler._queue_names``, ``name`` and
  ``interval``, and that rq's lock key of a queue holds the name of the
  scheduler that serves it, renewed to ``interval + 60`` seconds;
* :func:`mark_scheduled`: ``Job._status``, the status a job is saved with, set
  on a job written to Redis by a script of ours rather than by rq;
* :func:`reap_work_horse`: ``Worker._horse_pid``, the process running the
  current job, waited for when rq could not record the job's end.
"""

from __future__ import annotations

import contextlib
import os
from collections.abc import Callable
from typing import Any

__all__ = [
    "mark_scheduled",
    "reap_work_horse",
    "scheduler_died",
    "scheduler_running",
    "take_over_scheduler_lock",
]


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


#: Replace the holder of a lock (``ARGV[1]``) by another (``ARGV[2]``), only if it
#: still holds it: two workers taking over at once cannot both get it.
_TAKE_OVER_SCRIPT = """
if redis.call('GET', KEYS[1]) == ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[2], 'EX', tonumber(ARGV[3]))
    return 1
end
return 0
"""


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
        if stopped and connection.eval(_TAKE_OVER_SCRIPT, 1, key, holder, scheduler.name, ttl):
            taken.append((name, holder))
    return taken


def mark_scheduled(job: Any) -> None:
    """Give ``job`` (not saved yet) the status it has once in rq's scheduled job registry."""
    from rq.job import JobStatus

    job._status = JobStatus.SCHEDULED


def reap_work_horse(worker: Any) -> None:
    """Wait for ``worker``'s work horse, if one runs, and forget it (as rq does when it
    records a job's end), so that no process is left behind."""
    horse = int(getattr(worker, "_horse_pid", 0) or 0)
    if horse:
        with contextlib.suppress(ChildProcessError):
            os.waitpid(horse, 0)
        worker._horse_pid = 0
