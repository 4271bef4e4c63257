"""Fixtures shared by the whole suite.

The loopback engine and the redis-server are started by the test session
(``tests/plugin.py``, ``tests/services.py``); the fixtures here reset them
between tests.
"""

from __future__ import annotations

import contextlib
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest
import redis
from django.core.cache import caches
from django.test import override_settings

from indexnow_django import conf
from indexnow_django.sending import breaker
from indexnow_django.testing import LoopbackEngine
from indexnow_django.units import dispatch as kept_look
from tests import services

# ``start_worker``: real rq worker subprocesses (tests/workers.py).
pytest_plugins = ["tests.workers"]


@pytest.fixture(scope="session")
def django_db_modify_db_settings() -> None:
    """The test databases keep the names the settings give them.

    pytest-django appends a suffix per xdist worker (``_1``, ``_2``...) so that
    workers sharing a database server do not share a database; here each test
    process has a database of its own already (``tests/services.py``), and the
    rq workers a test starts, which read the settings and not pytest-django's
    suffix, must reach the same one.
    """


@pytest.fixture(scope="session")
def django_db_setup(django_db_setup: None, django_db_blocker: Any) -> Iterator[None]:
    """pytest-django's, and on PostgreSQL, before the test databases are dropped, the
    sessions still open on them ended: a worker process that is still exiting, or a
    thread of a test that outlived it, would otherwise fail the drop ("being accessed by
    other users") and with it the last test of the process."""
    yield
    from django.db import DatabaseError, connections

    with django_db_blocker.unblock():
        for connection in connections.all():
            if connection.vendor != "postgresql":
                continue
            # A database the run did not create (a site's tests use "default" alone).
            with contextlib.suppress(DatabaseError), connection.cursor() as cursor:
                cursor.execute(
                    "SELECT pg_terminate_backend(pid) FROM pg_stat_activity "
                    "WHERE datname = current_database() AND pid <> pg_backend_pid()"
                )


@pytest.fixture(scope="session", autouse=True)
def _database_features(django_db_setup: None, django_db_blocker: Any) -> None:
    """Ask each test database once what it supports, with access allowed.

    Django's system checks read it (``JSONField`` support, which SQLite answers
    with a query) and keep the answer: without this, a test that runs the checks
    with no database access passes only when an earlier test asked first.
    """
    from django.db import connections

    with django_db_blocker.unblock():
        for connection in connections.all():
            assert connection.features.supports_json_field is not None


@pytest.fixture(autouse=True)
def _fresh_state() -> Iterator[None]:
    """Every test starts with a quiet engine, empty caches and fresh settings."""
    services.engine().reset()
    for alias in ("default", "shared"):
        caches[alias].clear()
    conf.clear_cache()
    breaker.reset()
    # A process's one look for the URLs invalid settings kept runs in a thread that may
    # outlive its test (and hold a connection while the test database is dropped): it is
    # started by the tests of that look only (tests/test_pending.py).
    kept_look._kept_looked_for = True
    yield
    conf.clear_cache()
    breaker.reset()


@pytest.fixture(autouse=True)
def _indexnow_mark(request: pytest.FixtureRequest) -> None:
    """``@pytest.mark.indexnow(DISPATCH="sync")`` on a test, a class or a module: what it
    needs of ``INDEXNOW`` beyond the shipped defaults the suite runs with, merged over
    them (a nested dict key by key; the closest mark wins). The commands and servers the
    test starts get them too, through the environment; a worker gets the settings its
    test gives it (``start_worker(overrides)``)."""
    marks = list(request.node.iter_markers("indexnow"))
    if not marks:
        return
    settings = request.getfixturevalue("settings")
    merged, changes = dict(settings.INDEXNOW), {}
    for mark in reversed(marks):  # the module's first, the test's last
        for name, value in mark.kwargs.items():
            current = merged.get(name)
            merged[name] = {**current, **value} if isinstance(current, dict) else value
            changes[name] = merged[name]
    settings.INDEXNOW = merged
    request.getfixturevalue("monkeypatch").setenv("INDEXNOW_TEST_OVERRIDES", json.dumps(changes))


@pytest.fixture
def engine() -> LoopbackEngine:
    """The loopback IndexNow engine every test's ``ENGINES`` points at."""
    return services.engine()


@pytest.fixture
def indexnow_settings(settings: Any) -> Any:
    """Change ``INDEXNOW`` keys for one test: ``indexnow_settings(DRY_RUN=True)``."""

    def apply(**changes: Any) -> dict[str, Any]:
        settings.INDEXNOW = {**settings.INDEXNOW, **changes}
        return settings.INDEXNOW

    return apply


@pytest.fixture
def history_on(indexnow_settings: Any, monkeypatch: pytest.MonkeyPatch) -> dict[str, Any]:
    """POSTs recorded in the database (the default, said for the workers a test starts
    too), and this process has not purged old records yet. Returns the overrides."""
    from indexnow_django.sending import history

    monkeypatch.setattr(history, "_last_purge", None)
    monkeypatch.setattr(history, "_retries", {})
    overrides = {"HISTORY": {"ENABLED": True, "RETENTION_DAYS": 14}}
    indexnow_settings(**overrides)
    return overrides


def make_delivery(age_days: float = 0, **fields: Any) -> Any:
    """A ``Delivery`` record written by hand, ``age_days`` old."""
    from datetime import timedelta

    from django.utils import timezone

    from indexnow_django.models import Delivery

    values = {
        "sent_at": timezone.now() - timedelta(days=age_days),
        "batch_id": "handmade",
        "engine": "indexnow",
        "host": "www.example.com",
        "outcome": "accepted",
        "status": 200,
        "urls": "https://www.example.com/old/",
        **fields,
    }
    values.setdefault("url_count", len(values["urls"].split("\n")))
    return Delivery.objects.create(**values)


@pytest.fixture
def redis_url() -> str:
    return services.ensure_redis()


@pytest.fixture
def private_redis() -> Iterator[services.RedisServer]:
    """A redis-server of this test's own, to stop, freeze and restart; gone after the test."""
    server = services.RedisServer().start()
    yield server
    server.stop()


@pytest.fixture
def redis_conn(redis_url: str) -> Iterator[redis.Redis]:
    """A connection to the queue database, flushed before and after the test."""
    conn = redis.Redis.from_url(f"{redis_url}/0")
    conn.flushdb()
    yield conn
    conn.flushdb()
    conn.close()


class SilentRedis(int):
    """The port of a Redis that accepts connections and never answers, and what reached it."""

    accepted: list[socket.socket]
    probes: set[tuple[str, int]]

    def connections(self, timeout: float = 10.0) -> int:
        """How many connections the code under test opened to it so far. A probe of ours
        connects last and is waited for: the listener accepts in order, so any connection
        opened before it has been accepted by then."""
        import time

        with socket.create_connection(("127.0.0.1", int(self))) as probe:
            me = probe.getsockname()[:2]
            self.probes.add(me)
            deadline = time.monotonic() + timeout
            while me not in {conn.getpeername()[:2] for conn in list(self.accepted)}:
                assert time.monotonic() < deadline, "the probe was not accepted"
                time.sleep(0.01)
        return sum(1 for conn in list(self.accepted) if conn.getpeername()[:2] not in self.probes)


@pytest.fixture
def silent_redis() -> Iterator[SilentRedis]:
    """A port that accepts connections and never answers (a frozen or unreachable Redis)."""
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(8)
    port = SilentRedis(listener.getsockname()[1])
    port.accepted, port.probes = [], set()
    stop = threading.Event()

    def swallow() -> None:
        listener.settimeout(0.1)
        while not stop.is_set():
            try:
                port.accepted.append(listener.accept()[0])
            except OSError:
                continue

    thread = threading.Thread(target=swallow, daemon=True)
    thread.start()
    yield port
    stop.set()
    thread.join()
    for conn in port.accepted:
        conn.close()
    listener.close()


__all__ = ["override_settings"]
