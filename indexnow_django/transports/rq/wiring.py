"""How rq's workers are wired for this package: what the checks and ``indexnow_check`` read of
them without importing the worker class (which imports the collector).

The worker class itself is :mod:`.worker` (stable path ``indexnow_django.worker.Worker``).
"""

from __future__ import annotations

import os
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import OutOfMemoryError, ReadOnlyError
from redis.exceptions import TimeoutError as RedisTimeoutError

from ..heartbeat import SWEEP_EVERY, SWEEP_EVERY_ENV, sweep_every

__all__ = [
    "REDIS_OUTAGE",
    "SCHEDULER_TAKEOVER_AFTER",
    "SETTINGS_FIELD",
    "SWEEP_EVERY",
    "SWEEP_EVERY_ENV",
    "WORKER_CLASS_LINE",
    "configured_worker_class",
    "is_wired",
    "scheduler_death",
    "sweep_every",
]

#: The line of settings that makes ``manage.py rqworker`` flush jobs' URLs.
WORKER_CLASS_LINE = 'RQ = {"WORKER_CLASS": "indexnow_django.worker.Worker"}'


#: The field of rq's worker hash (``rq:worker:<name>``) that holds, as JSON, the
#: :func:`~indexnow_django.conf.settings_fingerprint` of the settings the worker
#: started with; ``indexnow_check`` compares it with its own.
SETTINGS_FIELD = "indexnow_settings"

#: A scheduler that holds a queue's lock and has not beaten for this many seconds
#: (rq's beats every second) has stopped: a worker without a scheduler takes its lock.
SCHEDULER_TAKEOVER_AFTER = 10.0

#: What Redis raises when it cannot be reached for a while, or refuses writes.
REDIS_OUTAGE = (RedisConnectionError, RedisTimeoutError, OutOfMemoryError, ReadOnlyError)


def configured_worker_class() -> tuple[str, type | None]:
    """The worker class ``manage.py rqworker`` uses: its dotted path and the class.

    The class is ``None`` when the path cannot be imported.
    """
    from django.conf import settings
    from django.utils.module_loading import import_string
    from rq.worker import Worker as RQWorker

    value: Any = (getattr(settings, "RQ", None) or {}).get("WORKER_CLASS", RQWorker)
    if isinstance(value, str):
        try:
            return value, import_string(value)
        except ImportError:
            return value, None
    if isinstance(value, type):
        return f"{value.__module__}.{value.__qualname__}", value
    return repr(value), None


def is_wired() -> bool:
    """Whether ``manage.py rqworker`` (without ``--worker-class``) gives jobs a unit of work."""
    _, cls = configured_worker_class()
    return bool(getattr(cls, "indexnow_unit_of_work", False))


def scheduler_death(scheduler: Any, stale_after: float = SCHEDULER_TAKEOVER_AFTER) -> str | None:
    """Why the rq scheduler ``scheduler`` (as fetched from Redis) is not alive, or ``None``.

    On this machine its process can be looked at; elsewhere its heartbeat
    (rq's scheduler records one each second or so) must be younger than
    ``stale_after`` seconds.
    """
    import socket
    from datetime import datetime, timezone

    pid = getattr(scheduler, "pid", 0)
    if pid and getattr(scheduler, "hostname", None) == socket.gethostname():
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return "its process is gone"
        except PermissionError:
            pass  # another user's process: alive
        else:
            try:
                with open(f"/proc/{pid}/stat") as stat:
                    if stat.read().rpartition(")")[2].split()[0] == "Z":
                        return "its process is gone"
            except (OSError, IndexError):
                pass
    beat = getattr(scheduler, "last_heartbeat", None)
    if isinstance(beat, datetime):
        if beat.tzinfo is None:
            beat = beat.replace(tzinfo=timezone.utc)
        age = (datetime.now(timezone.utc) - beat).total_seconds()
        if age > stale_after:
            return f"its last heartbeat was {age:.0f}s ago"
    return None
