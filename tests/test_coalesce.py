"""Coalesced delivery (``QUEUE["COALESCE"]``, ``coalesce.py``): the flushes of a window, from
every process, in one delivery; one Redis round trip per flush (and one per window for rq to schedule its job); nothing lost when a worker dies.
"""

from __future__ import annotations

import sys
import time
import types
from typing import Any

import pytest
import redis

from indexnow_django.conf import get_settings
from indexnow_django.testing import Reply
from indexnow_django.transports.rq import coalesce
from indexnow_django.transports.rq.queue import get_queue
from indexnow_django.units.dispatch import dispatch
from tests.rqhelpers import FAST_RETRY, failed_ids, stream_from_processes, wait_until_idle

WINDOW = 2


def coalesce_settings(indexnow_settings: Any, **changes: Any) -> dict[str, Any]:
    overrides: dict[str, Any] = {
        "DISPATCH": "queue",
        "QUEUE": {"COALESCE": WINDOW},
        "RETRY": dict(FAST_RETRY),
        "DEBOUNCE": {"CACHE": "shared", "TTL": 600},
        **changes,
    }
    indexnow_settings(**overrides)
    return overrides


def url(i: int) -> str:
    return f"https://www.example.com/p/{i}/"


class RoundTrips:
    """Counts what this process sends to Redis (a pipeline or a script call is one send)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.count = 0
        original = redis.connection.AbstractConnection.send_packed_command

        def counted(connection: Any, command: Any, check_health: bool = True) -> None:
            self.count += 1
            original(connection, command, check_health)

        monkeypatch.setattr(redis.connection.AbstractConnection, "send_packed_command", counted)


class ScriptKeys:
    """The Redis keys given to the Lua scripts that this package runs (rq's own are rq's)."""

    def __init__(self, monkeypatch: pytest.MonkeyPatch) -> None:
        self.keys: list[str] = []
        script_call = redis.commands.core.Script.__call__
        plain_eval = redis.Redis.eval

        def ours() -> bool:
            caller = sys._getframe(2).f_globals.get("__name__", "")
            return caller.startswith("indexnow_django")

        def call(script: Any, keys: Any = (), args: Any = (), client: Any = None) -> Any:
            if ours():
                self.keys += [str(key) for key in keys]
            return script_call(script, keys=keys, args=args, client=client)

        def evaluate(client: Any, source: str, count: int, *keys_and_args: Any) -> Any:
            if ours():
                self.keys += [str(key) for key in keys_and_args[:count]]
            return plain_eval(client, source, count, *keys_and_args)

        monkeypatch.setattr(redis.commands.core.Script, "__call__", call)
        monkeypatch.setattr(redis.Redis, "eval", evaluate)


def wait_for_window_start() -> None:
    """Return at the start of a window, so that what follows stays in one window. A wait
    on the clock itself: a worker cuts windows by its own process's clock, no test's."""
    time.sleep(WINDOW - time.time() % WINDOW + 0.01)


def test_each_flush_is_one_round_trip_and_the_window_one_job(
    indexnow_settings, redis_conn, monkeypatch
):
    coalesce_settings(indexnow_settings)
    dispatch([url(0)])  # connected, the script known
    # Every flush below in one window, the next one: the outbox's clock stands still there.
    next_window = (coalesce.window_of(time.time(), get_settings()) + 1) * WINDOW
    monkeypatch.setattr(coalesce, "time", types.SimpleNamespace(time=lambda: next_window + 0.5))
    sent = RoundTrips(monkeypatch)
    for i in range(1, 21):
        dispatch([url(i), url(i + 100)])

    # One per flush, and one more by the window's first flush: rq schedules the window's job.
    assert sent.count == 20 + 1
    queue = get_queue(get_settings())
    window_jobs = queue.scheduled_job_registry.get_job_ids()
    assert len(window_jobs) == 2  # the warm-up's window, and this one
    assert queue.count == 0  # no job per flush
    assert coalesce.outbox_count(queue) == 41
    job_memory = sum(redis_conn.memory_usage(f"rq:job:{job_id}") for job_id in window_jobs)
    assert job_memory / 21 < 1024  # bytes of jobs per pending flush


def test_the_scripts_of_ours_touch_keys_of_ours_only(indexnow_settings, redis_conn, monkeypatch):
    """rq's job hash, registries and queue set are written by rq's API, never by a script of
    ours: an rq release that changes them cannot break delivery unseen."""
    coalesce_settings(indexnow_settings)
    scripts = ScriptKeys(monkeypatch)
    for i in range(3):
        dispatch([url(i)])
    queue = get_queue(get_settings())
    coalesce.ensure_window_job(queue, get_settings())
    coalesce.take_outbox(queue, get_settings())

    assert scripts.keys
    assert [key for key in scripts.keys if not key.startswith("indexnow:")] == []
    [window_job] = queue.scheduled_job_registry.get_job_ids()
    assert queue.fetch_job(window_job).get_status() == "scheduled"


def test_a_url_pending_twice_is_one_entry_with_its_last_side(indexnow_settings, redis_conn):
    coalesce_settings(indexnow_settings)
    before = time.time()
    dispatch([url(1), url(2)])
    dispatch([url(1)], gone=[url(1)])
    after = time.time()
    queue = get_queue(get_settings())
    entries = redis_conn.hgetall(coalesce.outbox_key(queue.name))
    assert {url: value.split(b":")[0] for url, value in entries.items()} == {
        url(1).encode(): b"g",
        url(2).encode(): b"p",
    }
    # With when each was added (whole seconds), for indexnow_check's oldest wait.
    added = [int(value.split(b":")[1]) for value in entries.values()]
    assert all(int(before) <= when <= after for when in added)


def test_a_forced_flush_is_a_job_of_its_own(indexnow_settings, redis_conn):
    coalesce_settings(indexnow_settings)
    dispatch([url(1)], force=True)
    queue = get_queue(get_settings())
    assert queue.count == 1
    assert coalesce.outbox_count(queue) == 0


def test_redis_down_at_flush_time_sends_from_the_process(
    indexnow_settings, engine, private_redis, settings
):
    coalesce_settings(indexnow_settings)
    settings.RQ_QUEUES = {"default": {"URL": f"{private_redis.url}/0"}}
    private_redis.stop()
    dispatch([url(1)])
    assert engine.posted_urls() == [url(1)]


@pytest.mark.worker
def test_flushes_from_two_processes_are_one_post_per_window(
    indexnow_settings, start_worker, engine, redis_conn
):
    overrides = coalesce_settings(indexnow_settings)
    start_worker(overrides)
    windows = stream_from_processes(overrides, (0, 100), count=10, pause=0.05, window=WINDOW)

    expected = sorted([url(i) for i in range(10)] + [url(i) for i in range(100, 110)])
    deadline = time.monotonic() + 20
    while sorted(engine.posted_urls()) != expected and time.monotonic() < deadline:
        time.sleep(0.05)
    assert sorted(engine.posted_urls()) == expected  # each URL once
    # 20 flushes in a few windows (one or two, on a machine that keeps up): a POST per window.
    assert len(engine.posts) <= len(windows) < 20, (len(engine.posts), windows)
    assert failed_ids(redis_conn) == []


@pytest.mark.worker
def test_a_worker_killed_mid_post_of_a_coalesced_batch_loses_nothing(
    indexnow_settings, start_worker, engine, redis_conn
):
    overrides = coalesce_settings(indexnow_settings, HTTP={"TIMEOUT": 30})
    engine.queue_replies(Reply(200, delay=25))  # answered after the worker is gone
    doomed = start_worker(overrides)
    wait_for_window_start()
    for i in range(5):
        dispatch([url(i)])
    [first] = engine.wait_for_posts(1, timeout=20)
    assert sorted(first.urls) == [url(i) for i in range(5)]
    start_worker(overrides)  # the one left running
    doomed.kill()

    posts = engine.wait_for_posts(2, timeout=90)
    assert sorted(posts[1].urls) == [url(i) for i in range(5)]
    # No job and no pending URL left that could send.
    wait_until_idle(redis_conn, lambda: coalesce.outbox_count(get_queue(get_settings())) == 0)
    assert len(engine.posts) == 2
    assert failed_ids(redis_conn) == []


def test_a_window_job_that_cannot_be_scheduled_leaves_the_urls_pending_for_the_sweep(
    indexnow_settings, redis_conn, monkeypatch, engine
):
    """The flush's URLs are in the outbox once its first round trip is done: when rq cannot
    schedule the window's job then, the URLs wait there (nothing is sent from the web
    process as well) and a worker's sweep schedules the job."""
    from rq.queue import Queue

    coalesce_settings(indexnow_settings)
    original = Queue.schedule_job

    def refused(*args: Any, **kwargs: Any) -> Any:
        raise redis.exceptions.ConnectionError("gone between two round trips")

    monkeypatch.setattr(Queue, "schedule_job", refused)
    dispatch([url(1)])
    monkeypatch.setattr(Queue, "schedule_job", original)

    queue = get_queue(get_settings())
    assert coalesce.outbox_count(queue) == 1
    assert queue.scheduled_job_registry.get_job_ids() == []
    assert engine.posts == []  # not sent from here too
    job_id = coalesce.ensure_window_job(queue, get_settings())
    assert queue.scheduled_job_registry.get_job_ids() == [job_id]
