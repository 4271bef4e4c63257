"""``THROTTLE``: POSTs to an engine spaced by 60 / MAX_REQUESTS_PER_MINUTE seconds, for
every process at once; a command waits and says so, a worker's job defers itself."""

from __future__ import annotations

import logging
import time
from collections.abc import Callable
from datetime import datetime, timezone
from io import StringIO
from typing import Any

import pytest
import redis
from django.core.management import call_command
from rq.job import Job

from indexnow_django.conf import DEFAULTS, get_settings
from indexnow_django.protocol.client import Engine
from indexnow_django.sending.send import deliver_now
from indexnow_django.sending.throttle import Throttle
from indexnow_django.testing import LoopbackEngine
from indexnow_django.units.dispatch import dispatch
from tests import services
from tests.needs import UNTHROTTLED
from tests.rqhelpers import FAST_RETRY, finished_ids, wait_for_count

BASE = "https://www.example.com"


class SleepLog:
    """``time`` for the sending code, noting each wait it asks for (and waiting it)."""

    def __init__(self) -> None:
        self.waits: list[float] = []

    def sleep(self, seconds: float) -> None:
        self.waits.append(seconds)
        time.sleep(seconds)

    def __getattr__(self, name: str) -> Any:
        return getattr(time, name)


@pytest.fixture
def sends_waited(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """The waits the sending code of this process asked for (the throttle's)."""
    from indexnow_django.sending import send

    log = SleepLog()
    monkeypatch.setattr(send, "time", log)
    return log.waits


def epoch(moment: datetime) -> float:
    """A datetime of rq's (UTC, naive on some versions) as a ``time.time()``."""
    return (moment if moment.tzinfo else moment.replace(tzinfo=timezone.utc)).timestamp()


@pytest.mark.parametrize("cache", ["shared", "default"], ids=["redis", "cache-api"])
def test_a_bulk_command_waits_between_posts_and_says_so(
    engine: LoopbackEngine, indexnow_settings: Callable[..., Any], cache: str
) -> None:
    indexnow_settings(
        BATCH={"MAX_URLS": 1},
        DEBOUNCE={"CACHE": cache, "TTL": 600},
        THROTTLE={"MAX_REQUESTS_PER_MINUTE": 120},  # one every 0.5 s
    )
    out = StringIO()

    started = time.time()
    call_command("indexnow_submit", "/a/", "/b/", "/c/", "/d/", "--sync", stdout=out)

    assert engine.posted_urls() == [f"{BASE}/{name}/" for name in "abcd"]
    # Each POST at its slot or later: the first slot is when the command asked, each
    # next one 0.5 s after it. (The gaps between arrivals are not: a POST that left late
    # arrives closer to the next one.)
    arrived = [post.received_at - started for post in engine.posts]
    assert all(at >= 0.5 * n - 0.01 for n, at in enumerate(arrived)), arrived
    output = out.getvalue()
    assert output.count("Waiting ") >= 2
    assert (
        f"127.0.0.1:{engine.port}/indexnow takes 120 POSTs a minute "
        "(INDEXNOW['THROTTLE']['MAX_REQUESTS_PER_MINUTE'])"
    ) in output
    assert output.rstrip().endswith("4 accepted, 0 rejected, 0 failed.")


@pytest.mark.indexnow(**UNTHROTTLED)
def test_no_limit_sends_at_once(
    engine: LoopbackEngine, indexnow_settings: Callable[..., Any], sends_waited: list[float]
) -> None:
    indexnow_settings(BATCH={"MAX_URLS": 1}, DEBOUNCE={"CACHE": "shared", "TTL": 600})
    out = StringIO()

    call_command("indexnow_submit", "/a/", "/b/", "/c/", "--sync", stdout=out)

    assert len(engine.posts) == 3
    assert sends_waited == []
    assert "Waiting" not in out.getvalue()


def test_slots_are_shared_by_every_throttle_on_one_redis(
    indexnow_settings: Callable[..., Any],
) -> None:
    """Two processes' throttles are two objects on one cache: the slots are one sequence."""
    engine = Engine("e", "http://127.0.0.1:9/indexnow")
    first, second = Throttle("shared", 6), Throttle("shared", 6)  # one every 10 s

    host = "www.example.com"
    waits = [first.take(engine, host), second.take(engine, host)]
    waits += [first.take(engine, host), second.take(engine, host)]

    assert waits[0] == 0
    for n, wait in enumerate(waits[1:], 1):
        assert 10 * n - 0.5 <= wait <= 10 * n
    # Another engine has slots of its own, and so has another host (site) of the engine.
    assert first.take(Engine("f", "http://127.0.0.1:9/other"), host) == 0
    assert first.take(engine, "tenant.example.com") == 0


def test_a_quiet_engine_is_sent_at_once_through_the_cache_api() -> None:
    """Without Redis (a LocMemCache, a DatabaseCache) the first POST to a quiet engine goes
    at once, not at the next slot of the grid; the next ones keep the interval."""
    engine = Engine("e", "http://127.0.0.1:9/indexnow")
    first, second = Throttle("default", 6), Throttle("default", 6)  # one every 10 s

    host = "www.example.com"
    waits = [first.take(engine, host), second.take(engine, host), first.take(engine, host)]

    assert waits[0] == 0
    assert 10 - 0.5 <= waits[1] <= 20  # an interval after the first at least
    assert waits[2] == pytest.approx(waits[1] + 10, abs=0.5)


def test_a_dry_run_is_not_throttled(
    engine: LoopbackEngine, indexnow_settings: Callable[..., Any], sends_waited: list[float]
) -> None:
    indexnow_settings(
        DRY_RUN=True,
        BATCH={"MAX_URLS": 1},
        DEBOUNCE={"CACHE": "shared", "TTL": 600},
        THROTTLE={"MAX_REQUESTS_PER_MINUTE": 1},
    )
    dispatch(["/a/", "/b/", "/c/"])

    assert sends_waited == []
    assert engine.posts == []


@pytest.mark.worker
def test_three_workers_keep_to_the_budget_and_defer_jobs_instead_of_sleeping(
    engine: LoopbackEngine,
    indexnow_settings: Callable[..., Any],
    start_worker: Callable[..., Any],
    redis_conn: redis.Redis,
) -> None:
    overrides = {
        "DISPATCH": "queue",
        "RETRY": dict(FAST_RETRY),
        "DEBOUNCE": {"CACHE": "shared", "TTL": 600},
        "THROTTLE": {"MAX_REQUESTS_PER_MINUTE": 60},  # one a second
        # A job per flush, and each POST held back a job of its own due at its slot (with a
        # coalescing window they wait in the outbox: tests/test_outbox.py).
        "QUEUE": {"RESULT_TTL": 600, "COALESCE": 0},
    }
    indexnow_settings(**overrides)
    dispatched = time.time()
    for n in range(6):
        dispatch([f"/p{n}/"])
    workers = [start_worker(overrides) for _ in range(3)]

    engine.wait_for_posts(6, timeout=40)

    assert sorted(engine.posted_urls()) == [f"{BASE}/p{n}/" for n in range(6)]
    times = sorted(post.received_at for post in engine.posts)
    # Six slots a second apart, the first after the dispatch: the n-th POST goes out no
    # sooner than n seconds after it (a deferred job runs when rq's scheduler, polling
    # each second, finds it due: at its slot or after it).
    assert all(at - dispatched >= n - 0.05 for n, at in enumerate(times)), times
    wait_for_count(lambda: len(finished_ids(redis_conn)), 6 + 5, timeout=20)
    jobs = [Job.fetch(job_id, connection=redis_conn) for job_id in finished_ids(redis_conn)]
    deferred = [job for job in jobs if "slot" in job.kwargs]
    assert len(deferred) >= 5
    assert all(job.kwargs["engines"] == [engine.url] for job in deferred)
    # No job slept for its slot: the six first jobs, five of which deferred their POST,
    # had all ended when the last POST went out (one sleeping for it ends after it).
    first_jobs = [job for job in jobs if "slot" not in job.kwargs]
    assert len(first_jobs) == 6
    assert all(epoch(job.ended_at) < times[-1] for job in first_jobs)
    output = "".join(worker.output() for worker in workers)
    assert "IndexNow throttled batch=" in output
    assert "(THROTTLE['MAX_REQUESTS_PER_MINUTE'] is 60)" in output


def test_no_minute_holds_more_than_the_budget_even_for_a_late_sender() -> None:
    """Two POSTs a minute: a third, whatever slot it holds, waits for the first to leave."""
    engine = Engine("e", "http://127.0.0.1:9/late")
    throttle = Throttle("shared", 2)

    host = "www.example.com"
    assert throttle.admit(engine, host) == 0
    assert throttle.admit(engine, host) == 0
    assert 59 <= throttle.admit(engine, host) <= 60.01
    assert throttle.admit(engine, "tenant.example.com") == 0  # a budget of its own
    # The cache API has no count: its slots alone decide.
    assert Throttle("default", 2).admit(engine, host) == 0


@pytest.mark.slow
def test_a_frozen_redis_costs_one_timeout_not_one_per_post_at_the_shipped_throttle(
    engine: LoopbackEngine,
    indexnow_settings: Callable[..., Any],
    private_redis: services.RedisServer,
    settings: Any,
    caplog: pytest.LogCaptureFixture,
) -> None:
    """The debounce cache's Redis (where the throttle keeps its slots and its count) frozen
    with SIGSTOP: after the first call times out, taking a slot and counting the POST both
    skip that Redis, so the POSTs go out unthrottled at once instead of each waiting for
    the cache's timeout."""
    settings.CACHES = {
        **settings.CACHES,
        "frozen": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"{private_redis.url}/1",
        },
    }
    # THROTTLE as shipped (the suite turns it off); one URL per POST.
    indexnow_settings(DEBOUNCE={"CACHE": "frozen", "TTL": 600}, THROTTLE={}, BATCH={"MAX_URLS": 1})
    shipped = DEFAULTS["THROTTLE"]["MAX_REQUESTS_PER_MINUTE"]
    assert shipped is not None
    assert get_settings().throttle_per_minute == shipped
    deliver_now(["/warm/"])  # the connections are made: then frozen
    engine.reset()
    urls = [f"{BASE}/p{n}/" for n in range(4)]

    private_redis.freeze()
    try:
        started = time.monotonic()
        with caplog.at_level(logging.WARNING, logger="indexnow_django"):
            report = deliver_now(urls)
        took = time.monotonic() - started
    finally:
        private_redis.thaw()

    assert sorted(engine.posted_urls()) == urls
    assert [result.accepted for result in report.results] == [True] * 4
    # One timeout (the first call to the frozen Redis), not one more per POST.
    assert caplog.text.count("(TimeoutError: ") == 1, f"{took:.1f}s for 4 POSTs\n{caplog.text}"
    assert "sent unthrottled" in caplog.text
