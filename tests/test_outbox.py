"""Delivery at the shipped defaults (rq's transport): one outbox per host and engine.

Every test here leaves ``QUEUE``, ``THROTTLE``, ``HISTORY`` and ``BATCH`` at their
shipped defaults, as the suite's settings do, but for the throttle's budget where a
test says why, and says so again for the workers it starts; the engine is the loopback
engine, the workers are real rq workers with the scheduler.
"""

from __future__ import annotations

import time
from typing import Any

import pytest

from indexnow_django.conf import DEFAULTS, get_settings
from indexnow_django.sending.parcel import Parcel
from indexnow_django.sending.pending import PendingSubmission, keep
from indexnow_django.testing import Reply
from indexnow_django.transports.rq import coalesce
from indexnow_django.transports.rq.queue import get_queue
from indexnow_django.units.dispatch import dispatch
from tests.rqhelpers import FAST_SWEEP, failed_ids, stream_from_processes, wait_until_idle

pytestmark = [pytest.mark.worker, pytest.mark.django_db(transaction=True)]

#: The shipped defaults, said for the workers too (an empty dict merges over the
#: defaults), and a debounce cache the workers share, as a site with Redis has.
SHIPPED: dict[str, Any] = {
    "DISPATCH": "queue",
    "QUEUE": {},
    "THROTTLE": {},
    "HISTORY": {},
    "DEBOUNCE": {"CACHE": "shared"},
}
WINDOW = DEFAULTS["QUEUE"]["COALESCE"]


def url(i: int, host: str = "www.example.com") -> str:
    return f"https://{host}/p/{i}/"


def wait_for_window_start() -> None:
    """Return at the start of a window, so that what follows stays in one window. A wait
    on the clock itself: a worker cuts windows by its own process's clock, no test's."""
    time.sleep(WINDOW - time.time() % WINDOW + 0.01)


def wait_for_urls(engine: Any, expected: list[str], timeout: float) -> float:
    """Wait until the engine received every URL of ``expected``; the seconds it took."""
    started = time.monotonic()
    while not set(expected) <= set(engine.posted_urls()):
        assert time.monotonic() - started < timeout, (
            f"{len(set(expected) - set(engine.posted_urls()))} URL(s) not received "
            f"after {timeout:g}s"
        )
        time.sleep(0.05)
    return time.monotonic() - started


def wait_until_accepted(count: int, timeout: float = 20.0) -> None:
    """Block until ``count`` claims of the debounce store (a batch each) are recorded as
    accepted, not merely in flight: the state field of each claim's hash (``claim.lua``)."""
    from django.core.cache import caches

    from indexnow_django.compat import redis_cache_client
    from indexnow_django.sending.debounce.claims import engine_prefix

    conf = get_settings()
    target = redis_cache_client(caches[conf.debounce_cache])
    assert target is not None
    client, make_key = target
    [engine] = conf.engines
    pattern = make_key(engine_prefix(engine)) + "t:*"
    deadline = time.monotonic() + timeout
    while True:
        states = [client.hget(key, "s") for key in client.scan_iter(pattern)]
        if states.count(b"a") >= count:
            return
        assert time.monotonic() < deadline, f"claims {states} after {timeout:g}s"
        time.sleep(0.05)


def test_a_stream_from_two_processes_is_one_post_per_window(
    indexnow_settings, start_worker, engine, redis_conn
):
    """Two processes flush a URL every 0.1 s: one POST per window their flushes fell in
    (each process prints the windows it flushed in), not one per flush."""
    indexnow_settings(**SHIPPED)
    start_worker(SHIPPED)
    windows = stream_from_processes(SHIPPED, (0, 100), count=8, pause=0.1, window=WINDOW)

    expected = [url(i) for i in (*range(8), *range(100, 108))]
    wait_for_urls(engine, expected, timeout=60)
    assert sorted(engine.posted_urls()) == sorted(expected)  # each URL once
    # 16 flushes in a few windows (two, on a machine that keeps up): a POST per window.
    assert len(engine.posts) <= len(windows) < 16, (len(engine.posts), windows)
    assert failed_ids(redis_conn) == []


def test_a_flush_touching_200_hosts_reaches_them_faster_than_one_hosts_budget(
    indexnow_settings, start_worker, engine
):
    """The throttle's budget is per host and engine: 200 tenants are 200 sites, and an
    engine answering in 0.1 s gets their 200 POSTs at once, not one a second (the budget
    of one host at the shipped 60 a minute)."""
    tenants = [f"t{n}.example.com" for n in range(200)]
    overrides = {**SHIPPED, "HOSTS": ["www.example.com", *tenants]}
    indexnow_settings(**overrides)
    engine.default = Reply(200, delay=0.1)
    start_worker(overrides)

    expected = [url(1, host) for host in tenants]
    dispatch(expected)
    wait_for_urls(engine, expected, timeout=120)

    assert len(engine.posts) == 200  # one per host: each its own site to the engine
    assert sorted(engine.posted_urls()) == sorted(expected)
    # More in one second than one host's budget lets through (one a second).
    assert most_in_any_window(engine, seconds=1) >= 3


def most_in_any_window(engine: Any, seconds: float) -> int:
    """The most POSTs the engine received within any ``seconds``-long window."""
    times = sorted(post.received_at for post in engine.posts)
    return max(
        sum(1 for other in times[i:] if other < start + seconds) for i, start in enumerate(times)
    )


def test_urls_kept_during_a_redis_outage_go_out_in_one_post_per_host_and_engine(
    indexnow_settings, start_worker, engine
):
    """44 flushes kept in the database while Redis could not take them (as web processes
    keep them): once a worker can, they go out merged, one POST per host and engine, and
    the rows are gone."""
    indexnow_settings(**SHIPPED)
    second = "blog.example.com"
    overrides = {**SHIPPED, "HOSTS": ["www.example.com", second]}
    indexnow_settings(**overrides)
    expected = []
    for n in range(44):
        kept = url(n, "www.example.com" if n % 2 else second)
        expected.append(kept)
        keep(Parcel.of([kept]), reason="Redis cannot take jobs (ConnectionError: refused)")
    assert PendingSubmission.objects.count() == 44

    start_worker(overrides, extra_env=FAST_SWEEP)
    wait_for_urls(engine, expected, timeout=60)

    assert sorted(engine.posted_urls()) == sorted(expected)
    assert sorted(len(post.urls) for post in engine.posts) == [22, 22]  # one per host
    assert not PendingSubmission.objects.exists()


def test_a_throttled_backlog_for_one_host_goes_out_merged(indexnow_settings, start_worker, engine):
    """Six POSTs a minute for the host (one every 10 s): the flushes of the windows after
    the first POST wait in the engine's outbox and go out together at the next slot."""
    overrides = {**SHIPPED, "THROTTLE": {"MAX_REQUESTS_PER_MINUTE": 6}}
    indexnow_settings(**overrides)
    start_worker(overrides, extra_env=FAST_SWEEP)
    dispatched = time.time()
    dispatch([url(0)])
    [first] = engine.wait_for_posts(1, timeout=15)
    assert first.urls == [url(0)]

    later = [url(n) for n in range(1, 5)]
    for n, flushed in enumerate(later):
        dispatch([flushed])
        if n < len(later) - 1:
            wait_for_window_start()  # each in a window of its own
    wait_for_urls(engine, later, timeout=30)

    posts = engine.posts
    assert [sorted(post.urls) for post in posts] == [[url(0)], sorted(later)]
    # At its slot: the first POST's slot came after the dispatch, the next one 10 s later.
    assert posts[1].received_at - dispatched >= 10 - 0.05
    assert coalesce.outbox_count(get_queue(get_settings())) == 0


def test_a_worker_killed_mid_post_of_a_merged_delivery_loses_nothing_and_resends_only_the_unanswered(
    indexnow_settings, start_worker, engine, redis_conn
):
    """A window's delivery for two hosts: one POST answered at once, the other hanging when
    the worker is SIGKILLed. The next worker sends the unanswered host's URLs again and not
    those the engine already accepted."""
    overrides = {**SHIPPED, "HOSTS": ["www.example.com", "blog.example.com"]}
    overrides["HTTP"] = {"TIMEOUT": 30}
    indexnow_settings(**overrides)
    engine.queue_replies(Reply(200), Reply(200, delay=25))  # the second hangs
    doomed = start_worker(overrides, extra_env=FAST_SWEEP)
    wait_for_window_start()
    www = [url(n) for n in range(3)]
    blog = [url(n, "blog.example.com") for n in range(3)]
    dispatch(www + blog)
    engine.wait_for_posts(2, timeout=20)
    answered = engine.posts[0]
    hanging = engine.posts[1]
    wait_until_accepted(1)  # the first answer is settled; the second still hangs
    start_worker(overrides, extra_env=FAST_SWEEP)
    doomed.kill()

    posts = engine.wait_for_posts(3, timeout=60)
    assert sorted(posts[2].urls) == sorted(hanging.urls)  # sent again: nothing lost
    # No job and no pending URL left that could send.
    wait_until_idle(redis_conn, lambda: coalesce.outbox_count(get_queue(get_settings())) == 0)
    assert len(engine.posts) == 3
    # What the engine accepted before the worker died is not sent again.
    assert sum(engine.posted_urls().count(u) for u in answered.urls) == len(answered.urls)
    assert sorted(engine.posted_urls()) == sorted(www + blog + hanging.urls)
    assert failed_ids(redis_conn) == []
