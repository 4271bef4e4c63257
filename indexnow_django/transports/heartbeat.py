"""Heartbeats of running deliveries, for every transport: a job or task whose worker died is
found by its heartbeat stopping, within seconds, and sent again.

:func:`beating` renews a heartbeat (whatever ``beat`` writes: a Redis key, a
database row) every :func:`every` seconds in a thread while its block runs; each
lasts :func:`heartbeat_ttl` seconds. The test suite shortens both with
:data:`HEARTBEAT_TTL_ENV`, and the sweeps' interval with :data:`SWEEP_EVERY_ENV`.
"""

from __future__ import annotations

import contextlib
import os
import threading
from collections.abc import Callable, Iterator

__all__ = [
    "HEARTBEAT_EVERY",
    "HEARTBEAT_TTL",
    "HEARTBEAT_TTL_ENV",
    "SWEEP_EVERY",
    "SWEEP_EVERY_ENV",
    "beating",
    "env_seconds",
    "every",
    "heartbeat_ttl",
    "sweep_every",
]

#: A running delivery renews its heartbeat this often (seconds) ...
HEARTBEAT_EVERY = 5.0
#: ... and each heartbeat lasts this long: a delivery whose worker died has none
#: this many seconds after the last one.
HEARTBEAT_TTL = 15
#: An environment variable that sets :data:`HEARTBEAT_TTL` (whole seconds; the
#: heartbeat is renewed three times as often) for the test suite, whose tests of
#: dead workers need not wait 15 seconds. Leave it unset in production.
HEARTBEAT_TTL_ENV = "INDEXNOW_HEARTBEAT_TTL"

#: Seconds between two looks for deliveries whose worker died (by each rq worker, or
#: by the sweep task on django-tasks-db) ...
SWEEP_EVERY = 10
#: ... unless this environment variable gives another whole number (for the test suite).
SWEEP_EVERY_ENV = "INDEXNOW_SWEEP_EVERY"


def env_seconds(name: str, default: int) -> int:
    """The whole number of seconds in the environment variable ``name``, else ``default``
    (unset, or not a positive whole number)."""
    value = os.environ.get(name, "").strip()
    if value.isascii() and value.isdigit() and int(value) > 0:
        return int(value)
    return default


def heartbeat_ttl() -> int:
    """Seconds a heartbeat lasts: :data:`HEARTBEAT_TTL`, or :data:`HEARTBEAT_TTL_ENV`'s."""
    return env_seconds(HEARTBEAT_TTL_ENV, HEARTBEAT_TTL)


def every() -> float:
    """Seconds between two heartbeats."""
    return HEARTBEAT_EVERY * heartbeat_ttl() / HEARTBEAT_TTL


def sweep_every() -> int:
    """Seconds between two sweeps: :data:`SWEEP_EVERY`, or :data:`SWEEP_EVERY_ENV`'s."""
    return env_seconds(SWEEP_EVERY_ENV, SWEEP_EVERY)


@contextlib.contextmanager
def beating(
    beat: Callable[[], object], *, thread_done: Callable[[], None] | None = None
) -> Iterator[None]:
    """Call ``beat`` now and then every :func:`every` seconds in a thread while the block
    runs. ``beat`` must not raise; ``thread_done`` runs in the thread when it stops (to
    close what it opened). The last heartbeat is left to expire: it covers the moment
    between the end of the block and the transport marking the delivery as ended."""
    stop = threading.Event()
    interval = every()

    def keep_beating() -> None:
        try:
            while not stop.wait(interval):
                beat()
        finally:
            if thread_done is not None:
                thread_done()

    beat()  # before the work starts
    thread = threading.Thread(target=keep_beating, name="indexnow-heartbeat", daemon=True)
    thread.start()
    try:
        yield
    finally:
        stop.set()
        thread.join(interval)
