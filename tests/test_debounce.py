"""The debounce store on a local cache and on shared (Redis) caches."""

import os
import re
import signal
import subprocess
import sys
import threading
import time

import pytest
import redis
from django.core.cache import caches

from indexnow_django.conf import get_settings
from indexnow_django.protocol.client import Engine
from indexnow_django.sending.debounce import DebounceStore
from indexnow_django.testing import Reply
from tests.needs import ONE_JOB

URLS = [f"https://www.example.com/{i}/" for i in range(100)]
BING = Engine("bing", "https://www.bing.com/indexnow")
YANDEX = Engine("yandex", "https://yandex.com/indexnow")
# Two endpoints on one host: two engines.
E1 = Engine("127.0.0.1:9", "http://127.0.0.1:9/e1")
E2 = Engine("127.0.0.1:9", "http://127.0.0.1:9/e2")


@pytest.fixture
def django_redis_cache(settings, redis_url):
    """A django-redis cache (alias ``djredis``) on its own Redis database, emptied."""
    settings.CACHES = {
        **settings.CACHES,
        "djredis": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": f"{redis_url}/2"},
    }
    caches["djredis"].clear()
    yield "djredis"
    caches["djredis"].clear()


@pytest.fixture(params=["default", "shared", "djredis"])
def store(request):
    if request.param == "djredis":
        request.getfixturevalue("django_redis_cache")
    return DebounceStore(request.param, ttl=600, claim_ttl=30)


class Clock:
    """A clock for the store that a test moves on by hand: no waiting out a TTL."""

    def __init__(self, now: float | None = None) -> None:
        self.now = time.time() if now is None else now

    def __call__(self) -> float:
        return self.now

    def advance(self, seconds: float) -> None:
        self.now += seconds


def sent(store, engine, urls, gone=()):
    """Claim and record, as a sender whose POST was accepted; return what it sent."""
    claim = store.claim(engine, urls, gone=gone)
    store.record(claim)
    return claim.urls


def test_claim_then_record_blocks_later_claims(store):
    claim = store.claim(BING, URLS)
    assert claim.urls == URLS and claim.debounced == 0
    store.record(claim)
    again = store.claim(BING, URLS)
    assert again.urls == [] and again.debounced == len(URLS)
    assert store.filter_new(BING, URLS) == []
    # Per engine.
    assert store.claim(YANDEX, URLS[:3]).urls == URLS[:3]


def test_each_endpoint_is_its_own_engine(store):
    sent(store, E1, URLS)
    assert store.claim(E2, URLS).urls == URLS
    assert store.claim(E1, URLS).urls == []


def test_a_claim_in_flight_is_not_sent_twice_and_release_frees_it(store):
    first = store.claim(BING, URLS)
    assert store.claim(BING, URLS).urls == []  # in flight for a live sender (this process)
    store.release(first)
    assert store.claim(BING, URLS).urls == URLS


def test_only_the_new_urls_of_a_mixed_batch_pass_in_order(store):
    sent(store, BING, URLS[10:20])
    claim = store.claim(BING, URLS[:30])
    assert claim.urls == URLS[:10] + URLS[20:30]
    assert claim.debounced == 10


def test_force_claims_everything(store):
    sent(store, BING, URLS)
    assert store.claim(BING, URLS, force=True).urls == URLS


def test_zero_ttl_disables(store):
    off = DebounceStore(store.cache_alias, ttl=0)
    off.record(off.claim(BING, URLS))
    assert off.claim(BING, URLS).urls == URLS


def test_a_url_that_changed_side_is_sent_again_within_the_ttl(store):
    url = [URLS[0]]
    assert sent(store, BING, url) == url  # published
    assert sent(store, BING, url) == []  # saved again, still public
    assert sent(store, BING, url, gone=url) == url  # unpublished
    assert sent(store, BING, url, gone=url) == []  # deleted afterwards: still gone
    assert sent(store, BING, url) == url  # published again
    assert store.filter_new(BING, url) == [] and store.filter_new(BING, url, gone=url) == url


def test_one_batch_carries_both_sides(store):
    sent(store, BING, URLS[:4])
    claim = store.claim(BING, URLS[:6], gone=URLS[2:6])
    # 0, 1 still public: debounced; 2, 3 now gone; 4, 5 new (gone).
    assert claim.urls == URLS[2:6]
    store.record(claim)
    assert store.claim(BING, URLS[:6], gone=URLS[2:6]).urls == []


def test_ttl_expiry(store):
    clock = Clock()
    short = DebounceStore(store.cache_alias, ttl=1, claim_ttl=30, clock=clock)
    sent(short, BING, URLS[:5])
    assert short.claim(BING, URLS[:5]).urls == []
    clock.advance(1.1)
    assert short.claim(BING, URLS[:5]).urls == URLS[:5]


def test_the_claims_of_a_process_that_died_are_taken_over():
    """A sender that dies between its claim and its settlement (here: a child
    process that exits without settling) does not silence the next sender."""
    store = DebounceStore("shared", ttl=600, claim_ttl=300)
    code = (
        "import django; django.setup();"
        "from indexnow_django.sending.debounce import DebounceStore;"
        "from indexnow_django.protocol.client import Engine;"
        "s = DebounceStore('shared', ttl=600, claim_ttl=300);"
        f"print(len(s.claim(Engine('bing', {BING.endpoint!r}), {URLS!r}).urls))"
    )
    env = {**os.environ, "DJANGO_SETTINGS_MODULE": "tests.settings"}
    child = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, env=env)
    assert child.returncode == 0, child.stderr
    assert child.stdout.strip() == str(len(URLS))
    # The claims are there (a live holder's would stop this claim)...
    assert DebounceStore("shared", ttl=600).filter_new(BING, URLS) == []
    # ...but their holder is gone: a sender takes them over.
    assert store.claim(BING, URLS).urls == URLS


@pytest.mark.parametrize("alias", ["shared", "djredis"])
def test_concurrent_claims_on_redis_never_overlap(request, alias):
    """Eight threads with their own connections race for the same URLs, five rounds:
    each URL is won once per round."""
    if alias == "djredis":
        request.getfixturevalue("django_redis_cache")
    rounds = [[f"{url}round-{n}" for url in URLS] for n in range(5)]
    won: list[list[str]] = []
    barrier = threading.Barrier(8)

    def racer():
        store = DebounceStore(alias, ttl=600, claim_ttl=30)
        try:
            for urls in rounds:
                barrier.wait()
                won.append(store.claim(BING, urls).urls)
        finally:
            # Each thread has its own cache object and connection pool: close it.
            cache = caches[alias]
            if alias == "shared":
                for pool in cache._cache._pools.values():
                    pool.disconnect()
            else:
                cache.close()

    threads = [threading.Thread(target=racer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    flat = [url for claimed in won for url in claimed]
    assert sorted(flat) == sorted(url for urls in rounds for url in urls)


def test_an_unreachable_cache_never_stops_a_send(settings, caplog):
    settings.CACHES = {
        **settings.CACHES,
        "down": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": "redis://127.0.0.1:1/0",
        },
    }
    store = DebounceStore("down", ttl=600)
    claim = store.claim(BING, URLS)
    assert claim.urls == URLS
    store.record(claim)
    assert store.filter_new(BING, URLS) == URLS
    assert "debounce cache 'down' unavailable" in caplog.text


def test_redis_holds_a_few_bytes_per_url(redis_url, settings):
    """20,000 URLs claimed and recorded on an empty Redis database: the store's
    keys take less than 32 bytes per URL beyond the fixed cost of its small hashes."""
    settings.CACHES = {
        **settings.CACHES,
        "measured": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"{redis_url}/3",
        },
    }
    conn = redis.Redis.from_url(f"{redis_url}/3")
    conn.flushdb()
    store = DebounceStore("measured", ttl=600)

    def usage():
        pipe = conn.pipeline(transaction=False)
        keys = list(conn.scan_iter(count=5000))
        for key in keys:
            pipe.memory_usage(key, samples=0)
        return len(keys), sum(pipe.execute())

    urls = [f"https://www.example.com/articles/{n}/some-title/" for n in range(40_000)]
    for start in range(0, 20_000, 10_000):
        sent(store, BING, urls[start : start + 10_000])
    keys, half = usage()
    for start in range(20_000, 40_000, 10_000):
        sent(store, BING, urls[start : start + 10_000])
    _, full = usage()
    conn.flushdb()
    assert keys > 10_000  # the small hashes
    assert (full - half) / 20_000 < 32


def test_every_hash_expires_once_the_window_marker_is_full(private_redis, settings):
    """The script stamps each of a window's 16,384 hashes with its expiry once, then
    stops looking: URLs claimed after every hash has it still land in hashes that expire,
    and so does every other key the store writes."""
    from indexnow_django.sending.debounce.redis_store import digests

    settings.CACHES = {
        **settings.CACHES,
        "private": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"{private_redis.url}/0",
        },
    }
    conn = redis.Redis.from_url(f"{private_redis.url}/0")
    store = DebounceStore("private", ttl=600)
    # One URL per hash (the digest's first byte and the second's six low bits), then more.
    by_hash: dict[int, str] = {}
    spare: list[str] = []
    n = 0
    while len(by_hash) < 16_384:
        url = f"https://www.example.com/spread/{n}/"
        digest = digests([url])
        shard = digest[0] * 64 + digest[1]
        if shard in by_hash:
            spare.append(url)
        else:
            by_hash[shard] = url
        n += 1
    first = list(by_hash.values())
    assert sent(store, BING, first[:8_000]) == first[:8_000]
    assert sent(store, BING, first[8_000:]) == first[8_000:]
    markers = [key for key in conn.scan_iter(count=5000) if key.endswith(b":m")]
    assert len(markers) == 1 and conn.get(markers[0]) == b"\xff" * 2048
    assert sent(store, BING, spare[:5_000]) == spare[:5_000]
    assert store.claim(BING, first[:100] + spare[:100]).urls == []
    keys = [key for key in conn.scan_iter(count=5000) if not key.endswith(b":n")]
    assert len(keys) > 16_384
    pipe = conn.pipeline(transaction=False)
    for key in keys:
        pipe.ttl(key)
    assert [key for key, ttl in zip(keys, pipe.execute(), strict=True) if ttl <= 0] == []


def test_a_url_sent_in_the_previous_window_is_debounced_until_its_ttl_ends(store):
    """Redis keeps entries in windows as wide as the TTL: a URL accepted just before
    a window ends is still debounced in the next one, for the rest of its TTL."""
    ttl = 3
    # Just before a window boundary (a multiple of the TTL).
    clock = Clock((time.time() // ttl + 1) * ttl - 0.5)
    short = DebounceStore(store.cache_alias, ttl=ttl, claim_ttl=30, clock=clock)
    urls = [f"{url}0" for url in URLS[:7]]
    sent(short, BING, urls[:5])
    sent_at = clock.now
    clock.advance(0.6)  # the next window
    assert short.claim(BING, urls).urls == urls[5:7]
    assert short.filter_new(BING, urls[:5], gone=urls[:1]) == urls[:1]  # a side change
    clock.now = sent_at + ttl + 0.1
    assert short.claim(BING, urls[:5]).urls == urls[:5]


# Real workers ---------------------------------------------------------------

#: These tests follow the jobs of a worker's flushes (``ONE_JOB``), debounced in the cache
#: every process shares.
WORKER_SETTINGS = {**ONE_JOB, "DEBOUNCE": {"CACHE": "shared", "TTL": 600}}


def children(pid: int) -> set[int]:
    """The processes whose parent is ``pid`` (a worker's scheduler and work horse)."""
    found = set()
    for entry in os.listdir("/proc"):
        if entry.isdigit():
            try:
                with open(f"/proc/{entry}/stat") as stat:
                    fields = stat.read().rsplit(")", 1)[1].split()
            except OSError:
                continue
            if int(fields[1]) == pid:
                found.add(int(entry))
    return found


def finished_jobs(redis_conn, count, timeout=20.0):
    from tests.rqhelpers import finished_ids, wait_for_count

    wait_for_count(lambda: len(finished_ids(redis_conn)), count, timeout)
    return finished_ids(redis_conn)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_publish_then_unpublish_within_the_ttl_both_reach_the_engine(
    engine, indexnow_settings, start_worker, redis_conn
):
    from tests.testapp.models import Post

    indexnow_settings(**WORKER_SETTINGS)
    start_worker(WORKER_SETTINGS)
    url = "https://www.example.com/posts/hello/"
    post = Post.objects.create(title="Hello", slug="hello", status=Post.PUBLISHED)
    engine.wait_for_posts(1)
    post.title = "Hello again"
    post.save()  # still public: debounced
    finished_jobs(redis_conn, 2)
    post.status = Post.DRAFT
    post.save()  # unpublished within the TTL: sent again
    engine.wait_for_posts(2)
    post.title = "Hello, draft"
    post.status = Post.PUBLISHED
    post.save()  # published again
    engine.wait_for_posts(3)
    post.delete()  # deleted
    engine.wait_for_posts(4)
    finished_jobs(redis_conn, 5)
    assert [p.urls for p in engine.posts] == [[url]] * 4


def kill_horse_mid_post(engine, worker, redis_conn):
    """Dispatch one URL, SIGKILL the work horse while its POST waits for the answer,
    and return the failed job."""
    from indexnow_django.units.dispatch import dispatch
    from tests.rqhelpers import failed_ids, fetch, wait_for_status

    scheduler = re.search(r"Scheduler for \S+ started with PID (\d+)", worker.output())
    engine.queue_replies(Reply(200, delay=30))
    dispatch(["/killed/"])
    engine.wait_for_posts(1)
    [horse] = children(worker.pid) - {int(scheduler[1]) if scheduler else -1}
    os.kill(horse, signal.SIGKILL)
    [job_id] = failed_ids(redis_conn) or [None]
    deadline = time.monotonic() + 15
    while job_id is None and time.monotonic() < deadline:
        time.sleep(0.05)
        job_id = (failed_ids(redis_conn) or [None])[0]
    assert job_id is not None, worker.output()
    wait_for_status(redis_conn, [job_id], ["failed"])
    return fetch(redis_conn, job_id)


@pytest.mark.worker
def test_a_requeued_job_whose_work_horse_was_killed_mid_post_sends(
    engine, indexnow_settings, start_worker, redis_conn
):
    from rq import requeue_job

    from tests.rqhelpers import wait_for_status

    indexnow_settings(**WORKER_SETTINGS)
    worker = start_worker(WORKER_SETTINGS)
    worker.wait_for_output("Scheduler for default started")
    job = kill_horse_mid_post(engine, worker, redis_conn)
    requeue_job(job.id, connection=redis_conn)
    wait_for_status(redis_conn, [job.id], ["finished"])
    assert [p.urls for p in engine.posts] == [["https://www.example.com/killed/"]] * 2
    assert job.latest_result().return_value["accepted"] == 1


@pytest.mark.worker
def test_a_new_save_after_a_work_horse_was_killed_mid_post_sends(
    engine, indexnow_settings, start_worker, redis_conn
):
    from indexnow_django.units.dispatch import dispatch

    indexnow_settings(**WORKER_SETTINGS)
    worker = start_worker(WORKER_SETTINGS)
    worker.wait_for_output("Scheduler for default started")
    kill_horse_mid_post(engine, worker, redis_conn)  # its job failed: its claims are dead
    dispatch(["/killed/"])  # saved again, well within the claim's TTL
    engine.wait_for_posts(2)
    finished_jobs(redis_conn, 1)
    assert [p.urls for p in engine.posts] == [["https://www.example.com/killed/"]] * 2
    # Accepted this time: a third save within the TTL is debounced.
    dispatch(["/killed/"])
    finished_jobs(redis_conn, 2)
    assert len(engine.posts) == 2


@pytest.mark.django_db(transaction=True)
def test_the_request_path_makes_one_redis_round_trip_per_flush_and_none_without_change(
    client, indexnow_settings, redis_conn, monkeypatch
):
    """A request that saves makes exactly one Redis round trip (the URLs into the
    coalescing window's outbox; the debounce store is only read by workers), and the
    first of a window one more (rq schedules the window's job); one that changes
    nothing makes none."""
    from redis.connection import AbstractConnection

    from indexnow_django.transports.rq.coalesce import outbox_count, window_of
    from indexnow_django.transports.rq.queue import get_queue
    from tests.testapp.models import Post

    indexnow_settings(DISPATCH="queue", DEBOUNCE={"CACHE": "shared", "TTL": 600})
    post = Post.objects.create(title="Hello", slug="hello", status=Post.PUBLISHED)
    client.get("/test-key-0123456789.txt")  # connections opened by earlier code don't count
    redis_conn.flushdb()
    sent: list[bytes] = []
    original = AbstractConnection.send_packed_command

    def counted(self, command, check_health=True):
        sent.append(b"".join(command) if isinstance(command, list) else command)
        return original(self, command, check_health)

    monkeypatch.setattr(AbstractConnection, "send_packed_command", counted)
    assert client.get(f"/posts/{post.pk}/save/").status_code == 200
    monkeypatch.setattr(AbstractConnection, "send_packed_command", original)
    assert len(sent) == 2, sent  # the first flush of its window
    queue = get_queue(get_settings())
    assert outbox_count(queue) == 1
    assert len(queue.scheduled_job_registry.get_job_ids()) == 1  # the window's job

    for _ in range(3):  # a save in the same window (one that crossed into the next: again)
        window = window_of(time.time(), get_settings())
        sent.clear()
        monkeypatch.setattr(AbstractConnection, "send_packed_command", counted)
        assert client.get(f"/posts/{post.pk}/save/").status_code == 200
        monkeypatch.setattr(AbstractConnection, "send_packed_command", original)
        if window_of(time.time(), get_settings()) == window:
            break
    assert len(sent) == 1, sent

    monkeypatch.setattr(AbstractConnection, "send_packed_command", counted)
    sent.clear()
    assert client.get("/test-key-0123456789.txt").status_code == 200
    monkeypatch.setattr(AbstractConnection, "send_packed_command", original)
    assert sent == []
