"""Redis servers that stopped answering, skipped for a while: a circuit breaker per process.

A frozen Redis (SIGSTOP, a hung host, packets dropped) answers nothing, and
each call waits for its socket timeout (2 seconds on the request path) before
giving up. Without a breaker every flush of a busy process would wait that
long, and a synchronous worker (gunicorn's ``sync``) would serve its next
requests that much later.

:func:`guard` wraps a call to a Redis server. After one call timed out, the
calls to that server from this process are refused at once, with
:class:`RedisSkipped`, for :data:`WINDOW` seconds; then one call goes
through as a probe (the others keep being refused meanwhile): if it answers
the server is used again, if it times out too the window starts over. A
server is its address (host and port, a socket path, a Sentinel service),
whichever database or client is used: the queue's client and the debounce
cache's (the debounce store, the throttle) all learn from one timeout.

Only a timeout counts: a refused connection fails at once and costs nothing.
"""

from __future__ import annotations

import contextlib
import threading
import time
from collections.abc import Iterator
from typing import Any

from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import TimeoutError as RedisTimeoutError

__all__ = ["WINDOW", "RedisSkipped", "guard", "server_of"]

#: Seconds a server that timed out is skipped before one call tries it again.
WINDOW = 30.0


class RedisSkipped(RedisConnectionError):
    """A call not made: its Redis server timed out a moment ago (see :func:`guard`)."""


class _State:
    __slots__ = ("open_until", "probing", "since")

    def __init__(self) -> None:
        self.open_until = 0.0
        self.probing = False
        self.since = 0.0


_states: dict[str, _State] = {}
_lock = threading.Lock()


def server_of(client: Any) -> str:
    """The Redis server a redis-py client talks to: ``host:port``, ``unix:path`` or
    ``sentinel:service``."""
    pool = client.connection_pool
    service = getattr(pool, "service_name", None)
    if service:
        return f"sentinel:{service}"
    kwargs = pool.connection_kwargs
    if kwargs.get("path"):
        return f"unix:{kwargs['path']}"
    return f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"


@contextlib.contextmanager
def guard(client: Any) -> Iterator[None]:
    """Run the block's calls to ``client``'s server unless it timed out recently.

    Raises :class:`RedisSkipped` (a redis-py ``ConnectionError``) without
    running the block while the server is skipped. A ``TimeoutError`` from
    the block starts the window; a block that ends otherwise closes it.
    """
    server = server_of(client)
    now = time.monotonic()
    probe = False
    with _lock:
        state = _states.get(server)
        if state is not None and state.open_until:
            if now < state.open_until or state.probing:
                raise RedisSkipped(
                    f"Redis at {server} timed out {now - state.since:.0f}s ago: skipped for "
                    f"{WINDOW:g}s after a timeout"
                )
            state.probing = probe = True
    try:
        yield
    except RedisTimeoutError:
        with _lock:
            state = _states.setdefault(server, _State())
            moment = time.monotonic()
            if not state.open_until:
                state.since = moment
            state.open_until = moment + WINDOW
            state.probing = False
        raise
    except BaseException:
        if probe:
            with _lock:
                _states[server].probing = False
        raise
    if probe or server in _states:
        with _lock:
            _states.pop(server, None)


def reset() -> None:
    """Forget every server's timeouts (tests, or a process that knows Redis is back)."""
    with _lock:
        _states.clear()
