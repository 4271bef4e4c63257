"""dispatch(): one job per flush in queue mode, a send after the response in sync mode,
the Redis-down fallback, a synchronous (``ASYNC: False``) queue, and the cache check."""

from __future__ import annotations

import logging
import threading
import time
from collections.abc import Callable, Iterator
from datetime import timezone
from typing import Any

import pytest
from django.core import checks
from django.db import transaction
from django.http import HttpRequest, HttpResponse
from django.test import override_settings
from django.urls import path
from rq.registry import ScheduledJobRegistry

from indexnow_django import submit
from indexnow_django.checks import check_queue_wiring
from indexnow_django.jobs import deliver
from indexnow_django.sending import breaker
from indexnow_django.sending.history import flushed_at
from indexnow_django.testing import Reply
from indexnow_django.transports.rq.queue import META_ATTEMPT, META_BATCH_ID
from indexnow_django.units.dispatch import dispatch
from tests.needs import AT_ONCE, UNTHROTTLED
from tests.rqhelpers import (
    FAST_RETRY,
    exc_string,
    failed_ids,
    fetch,
    finished_ids,
    only_queued_job,
    queue_job_ids,
    wait_until_idle,
)
from tests.services import free_port

#: On the tests of ``DISPATCH: "sync"``: sent in process, and at once.
SYNC = pytest.mark.indexnow(**AT_ONCE)

A = "https://www.example.com/a/"
B = "https://www.example.com/b/"
KEY = "test-key-0123456789"


def flush_lines(caplog: pytest.LogCaptureFixture) -> list[str]:
    return [
        r.getMessage()
        for r in caplog.records
        if r.name == "indexnow_django.dispatch" and r.getMessage().startswith("IndexNow flush")
    ]


def closed_queue(**options: Any) -> dict[str, Any]:
    """``RQ_QUEUES`` whose Redis is a closed loopback port."""
    return {"default": {"URL": f"redis://127.0.0.1:{free_port()}/0", **options}}


# Queue mode ------------------------------------------------------------------


def test_one_flush_is_one_job_of_plain_strings(indexnow_settings, redis_conn, caplog, engine):
    indexnow_settings(DISPATCH="queue", QUEUE={"COALESCE": 0, "TIMEOUT": 42})
    before = time.time()
    with caplog.at_level(logging.INFO, logger="indexnow_django"):
        dispatch(["/a/", "https://WWW.example.com/b/#top", "/a/"])

    job = only_queued_job(redis_conn)
    assert job.func is deliver
    assert job.args == ([A, B],)
    assert all(type(url) is str for url in job.args[0])
    assert job.kwargs == {"batch_id": job.meta[META_BATCH_ID], "attempt": 1, "force": False}
    # The batch id says when the flush was (the history's flushed_at).
    flushed = flushed_at(job.kwargs["batch_id"])
    assert flushed is not None and before - 0.01 <= flushed.timestamp() <= time.time()
    assert job.meta == {META_BATCH_ID: job.kwargs["batch_id"], META_ATTEMPT: 1}
    assert job.timeout == 42
    assert job.description == f"IndexNow: 2 URLs, batch {job.kwargs['batch_id']}, attempt 1"
    assert flush_lines(caplog) == [
        f"IndexNow flush batch={job.kwargs['batch_id']} mode=queue count=2 queue=default "
        f"job={job.id}"
    ]
    assert engine.posts == []  # nothing is sent by the flushing process


def test_force_travels_with_the_job(indexnow_settings, redis_conn):
    indexnow_settings(DISPATCH="queue")
    dispatch(["/a/"], force=True)
    assert only_queued_job(redis_conn).kwargs["force"] is True


def test_auto_means_queue_when_the_queue_is_configured(indexnow_settings, redis_conn, engine):
    indexnow_settings(DISPATCH="auto", QUEUE={"COALESCE": 0})
    dispatch(["/a/"])
    assert len(queue_job_ids(redis_conn)) == 1
    assert engine.posts == []


def test_auto_means_sync_without_the_queue(indexnow_settings, redis_conn, engine):
    indexnow_settings(DISPATCH="auto", QUEUE={"NAME": "elsewhere"})
    dispatch(["/a/"])
    assert queue_job_ids(redis_conn) == []
    assert engine.posted_urls() == [A]


@pytest.mark.django_db(transaction=True)
def test_enqueued_at_once_inside_a_transaction_whatever_commit_mode_says(
    indexnow_settings, redis_conn, settings
):
    """django-rq defers an enqueue inside atomic() by default; the flush comes after commit."""
    settings.RQ = {**settings.RQ, "COMMIT_MODE": "on_db_commit"}
    indexnow_settings(DISPATCH="queue", QUEUE={"COALESCE": 0})
    with transaction.atomic():
        dispatch(["/a/"])
        assert len(queue_job_ids(redis_conn)) == 1


def test_delay_schedules_the_job(indexnow_settings, redis_conn):
    indexnow_settings(DISPATCH="queue", QUEUE={"COALESCE": 0, "DELAY": 30})
    before = time.time()
    dispatch(["/a/"])
    assert queue_job_ids(redis_conn) == []
    registry = ScheduledJobRegistry("default", connection=redis_conn)
    [job_id] = registry.get_job_ids()
    when = registry.get_scheduled_time(job_id).replace(tzinfo=timezone.utc).timestamp()
    assert before + 29 <= when <= time.time() + 31


def test_nothing_to_send_gives_no_job(indexnow_settings, redis_conn, caplog):
    indexnow_settings(DISPATCH="queue")
    with caplog.at_level(logging.INFO, logger="indexnow_django"):
        dispatch([])
        dispatch(["https://elsewhere.example.org/x/"])
    assert queue_job_ids(redis_conn) == []
    assert flush_lines(caplog) == []
    assert "dropped 1 URL(s)" in caplog.text


def test_disabled_gives_no_job(indexnow_settings, redis_conn, engine):
    indexnow_settings(DISPATCH="queue", ENABLED=False)
    dispatch(["/a/"])
    assert queue_job_ids(redis_conn) == []
    assert engine.posts == []


# Sync mode -------------------------------------------------------------------


@SYNC
def test_sync_without_response_sends_now(engine, caplog):
    with caplog.at_level(logging.INFO, logger="indexnow_django"):
        dispatch(["/a/"])
    assert engine.posted_urls() == [A]
    [line] = flush_lines(caplog)
    assert line.endswith("mode=sync count=1 when=now")


@pytest.mark.django_db  # closing a response closes old connections (request_finished)
@SYNC
def test_sync_with_response_sends_when_the_response_is_closed(engine):
    response = HttpResponse("ok")
    dispatch(["/a/"], response=response)
    assert engine.posts == []
    response.close()
    assert engine.posted_urls() == [A]


@pytest.mark.django_db  # closing a response closes old connections (request_finished)
@SYNC
def test_each_response_sends_only_its_own_urls(engine):
    first, second = HttpResponse("1"), HttpResponse("2")
    dispatch(["/a/"], response=first)
    dispatch(["/b/"], response=second)
    second.close()
    assert engine.posted_urls() == [B]
    first.close()
    assert engine.posted_urls() == [B, A]


@SYNC
def test_sync_does_not_retry_and_logs(engine, caplog):
    engine.queue_replies(Reply(429, headers={"Retry-After": "1"}))
    with caplog.at_level(logging.INFO, logger="indexnow_django"):
        dispatch(["/a/"])
    assert len(engine.posts) == 1
    [line] = flush_lines(caplog)
    batch_id = line.split("batch=")[1].split()[0]
    warnings = [r.getMessage() for r in caplog.records if r.levelno == logging.WARNING]
    assert any(
        w.startswith(f"IndexNow not accepted batch={batch_id} ") and "not retried" in w
        for w in warnings
    )


@SYNC
def test_sync_rejection_logs_the_hint_and_key_file(engine, caplog):
    engine.queue_replies(Reply(403))
    with caplog.at_level(logging.WARNING, logger="indexnow_django"):
        dispatch(["/a/"])
    assert "Run manage.py indexnow_check" in caplog.text
    assert "https://www.example.com/test….txt" in caplog.text and KEY not in caplog.text


def view_submitting(request: HttpRequest) -> HttpResponse:
    submit(["/a/", "/b/"])
    return HttpResponse("saved")


urlpatterns = [path("submit/", view_submitting)]


@SYNC
@pytest.mark.urls(__name__)
def test_a_request_in_sync_mode_posts_after_its_response(client, engine):
    response = client.get("/submit/")
    assert response.status_code == 200
    assert response.content == b"saved"
    assert engine.posted_urls() == [A, B]


# Redis down ------------------------------------------------------------------


@pytest.mark.urls(__name__)
def test_redis_down_the_request_succeeds_and_the_urls_arrive(
    client, engine, indexnow_settings, caplog
):
    indexnow_settings(DISPATCH="queue")
    with (
        override_settings(RQ_QUEUES=closed_queue()),
        caplog.at_level(logging.INFO, logger="indexnow_django"),
    ):
        response = client.get("/submit/")
    assert response.status_code == 200
    assert engine.posted_urls() == [A, B]
    [line] = flush_lines(caplog)
    assert "mode=fallback count=2 when=after-response" in line
    assert "queue 'default' cannot take the job (ConnectionError" in line
    assert "sending from this process instead" in line


@pytest.mark.django_db  # closing a response closes old connections (request_finished)
def test_redis_down_waits_for_the_response(engine, indexnow_settings):
    indexnow_settings(DISPATCH="queue")
    response = HttpResponse()
    with override_settings(RQ_QUEUES=closed_queue()):
        dispatch(["/a/"], response=response)
        assert engine.posts == []
    response.close()
    assert engine.posted_urls() == [A]


def test_redis_down_without_response_sends_now(engine, indexnow_settings, caplog):
    indexnow_settings(DISPATCH="queue")
    with (
        override_settings(RQ_QUEUES=closed_queue()),
        caplog.at_level(logging.INFO, logger="indexnow_django"),
    ):
        dispatch(["/a/"])
    assert engine.posted_urls() == [A]
    [line] = flush_lines(caplog)
    assert "mode=fallback count=1 when=now" in line


def test_redis_down_for_the_debounce_cache_too(engine, indexnow_settings, settings, caplog):
    """One Redis for the queue and the cache, down: sent anyway, without debounce."""
    indexnow_settings(DISPATCH="queue", DEBOUNCE={"CACHE": "shared", "TTL": 600})
    dead = f"redis://127.0.0.1:{free_port()}"
    caches = {
        **settings.CACHES,
        "shared": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": dead},
    }
    with (
        override_settings(RQ_QUEUES=closed_queue(), CACHES=caches),
        caplog.at_level(logging.WARNING, logger="indexnow_django"),
    ):
        dispatch(["/a/"])
    assert engine.posted_urls() == [A]
    assert "IndexNow debounce cache 'shared' unavailable" in caplog.text


# A synchronous queue (ASYNC: False) ------------------------------------------


def sync_queue(redis_url: str) -> dict[str, Any]:
    return {"default": {"URL": f"{redis_url}/0", "ASYNC": False}}


def test_synchronous_queue_runs_the_job_at_flush(engine, indexnow_settings, redis_conn, redis_url):
    indexnow_settings(DISPATCH="queue", QUEUE={"DELAY": 30, "RESULT_TTL": 600})
    with override_settings(RQ_QUEUES=sync_queue(redis_url)):
        dispatch(["/a/"], response=HttpResponse())
        assert engine.posted_urls() == [A]  # in the flush, DELAY ignored
    [job_id] = finished_ids(redis_conn)
    assert fetch(redis_conn, job_id).meta[META_ATTEMPT] == 1


def test_synchronous_queue_does_not_retry_the_job_fails(
    engine, indexnow_settings, redis_conn, redis_url
):
    indexnow_settings(DISPATCH="queue", RETRY=FAST_RETRY)
    engine.queue_replies(Reply(429, headers={"Retry-After": "1"}))
    with override_settings(RQ_QUEUES=sync_queue(redis_url)):
        dispatch(["/a/"])
    assert len(engine.posts) == 1
    [job_id] = failed_ids(redis_conn)
    assert ScheduledJobRegistry("default", connection=redis_conn).get_job_ids() == []
    text = exc_string(fetch(redis_conn, job_id))
    assert "RetriesExhausted" in text
    assert "not retried after attempt 1 of 3" in text
    assert "ASYNC: False" in text


# System check ------------------------------------------------------------------


def cache_warning(alias: str, backend: str, kind: str) -> checks.Warning:
    return checks.Warning(
        f"INDEXNOW['DEBOUNCE']['CACHE'] is {alias!r} ({backend}), which {kind}: nothing is "
        "debounced, even with a single worker, so an engine receives a URL again at every save.",
        hint="Point DEBOUNCE['CACHE'] at a cache that workers share, such as Django's RedisCache.",
        id="indexnow.W002",
    )


def test_check_local_cache_with_queue_dispatch(indexnow_settings):
    indexnow_settings(DISPATCH="queue")
    assert check_queue_wiring() == [
        cache_warning(
            "default",
            "LocMemCache",
            "is local to each process, and rq's worker runs each job in a new process",
        )
    ]


def test_check_dummy_cache_with_queue_dispatch(indexnow_settings, settings):
    settings.CACHES = {
        **settings.CACHES,
        "none": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"},
    }
    indexnow_settings(DISPATCH="queue", DEBOUNCE={"CACHE": "none"})
    assert check_queue_wiring() == [cache_warning("none", "DummyCache", "keeps nothing")]


@pytest.mark.parametrize(
    "changes",
    [
        {"DISPATCH": "queue", "DEBOUNCE": {"CACHE": "shared"}},
        {"DISPATCH": "queue", "DEBOUNCE": {"TTL": 0}},
        {"DISPATCH": "sync"},
    ],
)
def test_check_quiet_with_a_shared_cache_or_sync_dispatch(indexnow_settings, changes):
    indexnow_settings(**changes)
    assert check_queue_wiring() == []


# Django 6.1's check command also runs the database checks.
@pytest.mark.django_db
def test_manage_py_check_shows_the_warning(indexnow_settings):
    indexnow_settings(DISPATCH="queue")
    ids = [message.id for message in checks.run_checks()]
    assert "indexnow.W002" in ids


@pytest.mark.slow
@pytest.mark.django_db
# The fallback's POST goes at once: the throttle could hold it for its slot.
@pytest.mark.indexnow(**UNTHROTTLED)
def test_a_redis_that_never_answers_costs_one_flush_its_timeout(
    indexnow_settings, engine, caplog, silent_redis
):
    """A host that accepts connections and then says nothing (a dropped network, a hung
    Redis): the flush gives up after the Redis timeout and keeps its URLs for a worker
    (Redis may still take the job); the next flushes skip the enqueue and send at once."""
    from indexnow_django.sending import breaker
    from indexnow_django.sending.pending import ENQUEUE_TIMED_OUT, PendingSubmission

    indexnow_settings(DISPATCH="queue")
    with override_settings(RQ_QUEUES={"default": {"URL": f"redis://127.0.0.1:{silent_redis}/0"}}):
        dispatch(["/a/"])
        # One connection, given up at its timeout (its sockets' socket_timeout: see
        # tests/test_queue.py), not tried again.
        assert silent_redis.connections() == 1
        dispatch(["/b/"])
        # The breaker: straight to the fallback, without waiting for Redis: no connection.
        assert silent_redis.connections() == 1

    [kept] = PendingSubmission.objects.all()
    assert kept.url_list == [A]
    assert kept.reason.startswith(ENQUEUE_TIMED_OUT)
    assert any("mode=kept" in r.getMessage() for r in caplog.records)
    assert engine.posted_urls() == [B]
    [fallback] = [r.getMessage() for r in caplog.records if "mode=fallback" in r.getMessage()]
    assert f"skipped for {breaker.WINDOW:g}s after a timeout" in fallback


def test_flushes_share_one_redis_client(indexnow_settings, redis_conn):
    indexnow_settings(DISPATCH="queue", QUEUE={"COALESCE": 0})
    stats_before = redis_conn.info("stats")["total_connections_received"]
    for _ in range(5):
        dispatch(["/a/"])
    stats_after = redis_conn.info("stats")["total_connections_received"]
    assert len(queue_job_ids(redis_conn)) == 5
    assert stats_after - stats_before <= 1


# A frozen Redis ------------------------------------------------------------------


@pytest.fixture
def wsgi_server() -> Iterator[Callable[[], str]]:
    """Start Django's own threaded development server on 127.0.0.1 (with the settings of
    that moment); returns its URL."""
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.servers.basehttp import ThreadedWSGIServer, WSGIRequestHandler

    servers: list[tuple[ThreadedWSGIServer, threading.Thread]] = []

    def start() -> str:
        server = ThreadedWSGIServer(("127.0.0.1", 0), WSGIRequestHandler)
        server.set_app(WSGIHandler())
        thread = threading.Thread(target=server.serve_forever, daemon=True)
        thread.start()
        servers.append((server, thread))
        return f"http://127.0.0.1:{server.server_address[1]}"

    yield start
    for server, thread in servers:
        server.shutdown()
        server.server_close()
        thread.join(5)


@pytest.mark.django_db(transaction=True)
@pytest.mark.slow
def test_a_frozen_redis_holds_no_request_beyond_the_bound(
    wsgi_server, client, private_redis, indexnow_settings, engine, settings, caplog
):
    """The queue and the debounce cache on one Redis, frozen with SIGSTOP: a request that
    saves a post answers at once (its flush runs after the response); the flush's enqueue
    gives up after the timeout and keeps the URL for a worker (Redis may still take the
    job). The next flush skips the frozen Redis altogether: its enqueue and its debounce
    calls (the breaker), and is sent at once."""
    import requests

    from indexnow_django.sending import breaker
    from indexnow_django.sending.pending import PendingSubmission
    from indexnow_django.transports.rq.queue import REDIS_TIMEOUT
    from tests.testapp.models import Post

    settings.ROOT_URLCONF = "tests.testapp.urls"
    # As on most sites: it sets Content-Length, so a client has the whole answer at once.
    settings.MIDDLEWARE = ["django.middleware.common.CommonMiddleware", *settings.MIDDLEWARE]
    settings.RQ_QUEUES = {"default": {"URL": f"{private_redis.url}/0"}}
    settings.CACHES = {
        **settings.CACHES,
        "frozen": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"{private_redis.url}/1",
        },
    }
    indexnow_settings(DISPATCH="queue", DEBOUNCE={"CACHE": "frozen", "TTL": 600})
    post = Post.objects.create(title="Hello", slug="hello", status=Post.PUBLISHED)
    path = f"/posts/{post.pk}/save/"
    server = wsgi_server()
    assert requests.get(server + path, timeout=10).status_code == 200
    assert client.get(path).status_code == 200  # connections made: then frozen
    engine.reset()

    private_redis.freeze()
    try:
        # A real server: the answer goes out before the flush.
        response = requests.get(server + path, timeout=30)
        answered_at = time.time()
        deadline = time.monotonic() + 3 * REDIS_TIMEOUT + 5
        while not PendingSubmission.objects.exists() and time.monotonic() < deadline:
            time.sleep(0.05)
        [kept] = PendingSubmission.objects.all()
        # Django's test client closes the response (and so runs the flush) before returning.
        caplog.clear()
        test_client_response = client.get(path)
    finally:
        private_redis.thaw()

    assert response.status_code == test_client_response.status_code == 200
    # The answer came before the flush gave up on the frozen Redis and kept the URL.
    assert answered_at < kept.kept_at.timestamp()
    assert kept.url_list == [HELLO]
    # The next flush did not wait for the frozen Redis: the breaker sent it at once.
    [fallback] = [r.getMessage() for r in caplog.records if "mode=fallback" in r.getMessage()]
    assert f"skipped for {breaker.WINDOW:g}s after a timeout" in fallback
    assert [p.urls for p in engine.posts] == [[HELLO]]


HELLO = "https://www.example.com/posts/hello/"


# A frozen Redis under load --------------------------------------------------------

#: Concurrent clients, and the saves each makes per phase (Redis up, Redis frozen).
CLIENTS = 12
SAVES = 40
#: Synchronous server processes (as gunicorn's sync workers): each serves one request
#: at a time and runs its flush after the answer went out, before the next request.
SERVERS = 4


@pytest.fixture
def sync_servers(tmp_path) -> Iterator[Callable[[dict[str, str]], list[str]]]:
    """Start ``SERVERS`` processes of ``manage.py runserver --nothreading`` with the given
    environment; returns their URLs. Stopped after the test."""
    import subprocess
    import sys

    import requests

    from tests.services import ROOT, django_env

    procs: list[subprocess.Popen[bytes]] = []

    def start(env: dict[str, str]) -> list[str]:
        urls = []
        for number in range(SERVERS):
            port = free_port()
            with (tmp_path / f"server-{number}.log").open("wb") as log:
                procs.append(
                    subprocess.Popen(
                        [
                            sys.executable,
                            "-m",
                            "django",
                            "runserver",
                            f"127.0.0.1:{port}",
                            "--noreload",
                            "--nothreading",
                            "--skip-checks",
                        ],
                        cwd=ROOT,
                        env=django_env(**env),
                        stdout=log,
                        stderr=subprocess.STDOUT,
                    )
                )
            urls.append(f"http://127.0.0.1:{port}")
        for url in urls:
            deadline = time.monotonic() + 30
            while True:
                try:
                    requests.get(f"{url}/test-key-0123456789.txt", timeout=2)
                    break
                except requests.ConnectionError:
                    assert time.monotonic() < deadline, f"{url} did not answer"
                    time.sleep(0.1)
        return urls

    yield start
    for proc in procs:
        proc.terminate()
    for proc in procs:
        try:
            proc.wait(10)
        except Exception:
            proc.kill()


def _p95(durations: list[float]) -> float:
    ordered = sorted(durations)
    return ordered[max(0, int(len(ordered) * 0.95) - 1)]


@pytest.mark.slow
@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_frozen_redis_under_concurrent_saves_answers_in_normal_time_and_sends_once(
    private_redis, engine, start_worker, indexnow_settings, settings, sync_servers, capsys, tmp_path
):
    """12 clients save posts against synchronous server processes while the queue's and
    the debounce cache's Redis is frozen (SIGSTOP): after one timeout per process the
    flushes skip that Redis, so the answers take their usual time; after SIGCONT every
    URL has been sent exactly once (an enqueue that timed out, then ran, is not sent
    again beside the URLs kept for it)."""
    import json
    import sys
    from concurrent.futures import ThreadPoolExecutor

    import redis
    import requests

    from indexnow_django.sending.pending import PendingSubmission
    from tests.testapp.models import Post

    queues = {"default": {"URL": f"{private_redis.url}/0"}}
    caches = {
        "frozen": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"{private_redis.url}/1",
        }
    }
    middleware = ["django.middleware.common.CommonMiddleware", *settings.MIDDLEWARE]
    settings.RQ_QUEUES = queues
    settings.CACHES = {**settings.CACHES, **caches}
    overrides = {"DISPATCH": "queue", "DEBOUNCE": {"CACHE": "frozen", "TTL": 600}}
    indexnow_settings(**overrides)
    both = {"RQ_QUEUES": queues, "CACHES": caches}
    conn = redis.Redis.from_url(f"{private_redis.url}/0")
    worker_env = {"INDEXNOW_TEST_SETTINGS": json.dumps(both), "INDEXNOW_SWEEP_EVERY": "2"}
    worker = start_worker(overrides, extra_env=worker_env, conn=conn)
    servers = sync_servers(
        {
            "INDEXNOW_TEST_OVERRIDES": json.dumps(overrides),
            "INDEXNOW_TEST_SETTINGS": json.dumps({**both, "MIDDLEWARE": middleware}),
        }
    )
    posts = Post.objects.bulk_create(
        Post(title=f"Post {n}", slug=f"post-{n}", status=Post.PUBLISHED)
        for n in range(2 * CLIENTS * SAVES)
    )
    up, frozen = posts[: CLIENTS * SAVES], posts[CLIENTS * SAVES :]

    def phase(batch: list[Post]) -> list[float]:
        def client(number: int) -> list[float]:
            server = servers[number % SERVERS]
            took = []
            for post in batch[number::CLIENTS]:
                started = time.monotonic()
                assert requests.get(f"{server}/posts/{post.pk}/save/", timeout=60).ok
                took.append(time.monotonic() - started)
            return took

        with ThreadPoolExecutor(CLIENTS) as pool:
            return [d for durations in pool.map(client, range(CLIENTS)) for d in durations]

    def sent(batch: list[Post], timeout: float) -> list[str]:
        wanted = {f"https://www.example.com/posts/{post.slug}/" for post in batch}
        deadline = time.monotonic() + timeout
        while not wanted <= set(engine.posted_urls()) and time.monotonic() < deadline:
            time.sleep(0.1)
        return sorted(wanted - set(engine.posted_urls()))

    with_redis = phase(up)
    assert sent(up, 60) == []

    private_redis.freeze()
    frozen_at = time.monotonic()
    try:
        without_redis = phase(frozen)
    finally:
        private_redis.thaw()
        frozen_for = time.monotonic() - frozen_at
    if "quitting" in worker.output() or not worker.running():
        # rq's worker quits when its Redis stays silent long enough (a slow machine makes
        # the frozen phase that long): started again once it is gone, as its supervisor
        # would.
        worker.stop()
        start_worker(overrides, extra_env=worker_env, conn=conn)
    assert sent(frozen, 90) == []
    # Whatever is still to run (a twin of a kept flush) runs now: no job and no kept row
    # is left that could send.
    wait_until_idle(conn, lambda: not PendingSubmission.objects.exists())

    urls = engine.posted_urls()
    twice = sorted({url for url in urls if urls.count(url) > 1})
    assert twice == []
    assert len(urls) == len(posts)
    # Each process waited on the frozen Redis once (once per breaker window: a probe
    # after it waits again), and skipped it for every other flush: the answers kept
    # their usual time, whatever that is on the machine running the test.
    for log in sorted(tmp_path.glob("server-*.log")):
        text = log.read_text()
        waits = text.count("(TimeoutError: ")
        assert 1 <= waits <= 1 + frozen_for // breaker.WINDOW, (log.name, waits, frozen_for)
        assert "RedisSkipped" in text, log.name
    with capsys.disabled():  # the figures, for whoever runs it with -s
        sys.stdout.write(
            f"\n{len(with_redis)} saves with Redis up: p95 {_p95(with_redis):.3f}s, max "
            f"{max(with_redis):.3f}s; {len(without_redis)} with Redis frozen: p95 "
            f"{_p95(without_redis):.3f}s, max {max(without_redis):.3f}s\n"
        )
