"""The delivery job on real rq workers: retries through rq's scheduler, final failures,
requeue, several engines, several workers.

Each test flushes with ``dispatch()`` (one job waits in the queue), then starts a
real ``manage.py rqworker --with-scheduler`` with the same settings, and reads
what the loopback engine received and what rq's registries hold. Delays are
short (1-3 s). rq keeps due times in whole seconds (the job rounds up, so a
retry never runs early) and its scheduler looks for due jobs about once a
second, so a retry due in ``d`` seconds runs between ``d`` and ``d + 2`` seconds
later.
"""

from __future__ import annotations

import itertools
import logging
import pickle
import re
import subprocess
import sys
import time
from email.utils import formatdate
from typing import Any

import pytest
from rq import requeue_job
from rq.worker import Worker as RQWorker

from indexnow_django.exceptions import SubmissionRejected
from indexnow_django.jobs import deliver
from indexnow_django.testing import LoopbackEngine, Reply
from indexnow_django.transports.rq.queue import META_ATTEMPT, META_BATCH_ID
from indexnow_django.units.dispatch import dispatch
from tests.needs import ONE_JOB
from tests.rqhelpers import (
    FAST_RETRY,
    FAST_SWEEP,
    all_job_ids,
    batch_jobs,
    exc_string,
    failed_ids,
    fetch,
    finished_ids,
    only_queued_job,
    wait_for_batch,
    wait_for_count,
    wait_for_status,
    wait_until_idle,
)

pytestmark = pytest.mark.worker

KEY = "test-key-0123456789"
A = "https://www.example.com/a/"
B = "https://www.example.com/b/"


def queue_settings(indexnow_settings: Any, **changes: Any) -> dict[str, Any]:
    """Queue dispatch with fast retries, here and (returned) for the worker; these tests
    follow the job that a flush makes (``ONE_JOB``)."""
    queue = {**ONE_JOB["QUEUE"], **changes.pop("QUEUE", {})}
    overrides: dict[str, Any] = {**ONE_JOB, "RETRY": dict(FAST_RETRY), "QUEUE": queue, **changes}
    indexnow_settings(**overrides)
    return overrides


def gaps(engine: LoopbackEngine) -> list[float]:
    times = [post.received_at for post in engine.posts]
    return [later - earlier for earlier, later in itertools.pairwise(times)]


def test_429_with_retry_after_sends_again_that_much_later_then_finishes(
    engine, indexnow_settings, start_worker, redis_conn
):
    overrides = queue_settings(indexnow_settings, RETRY={**FAST_RETRY, "BASE_DELAY": 30})
    engine.queue_replies(Reply(429, headers={"Retry-After": "2"}))
    dispatch(["/a/", "/b/"])
    first = only_queued_job(redis_conn)
    batch_id = first.meta[META_BATCH_ID]
    worker = start_worker(overrides)

    posts = engine.wait_for_posts(2, timeout=15)
    assert [post.urls for post in posts] == [[A, B], [A, B]]
    [gap] = gaps(engine)
    assert gap >= 2.0  # Retry-After, and not BASE_DELAY: the log below says in=2.0s

    first_again, second = wait_for_batch(redis_conn, batch_id, 2, "finished")
    assert first_again.id == first.id
    assert second.id != first.id
    assert first.get_status() == "finished"
    assert second.meta == {META_BATCH_ID: batch_id, META_ATTEMPT: 2}
    assert second.args == ([A, B],)
    assert second.kwargs["attempt"] == 2
    assert second.kwargs["engines"] == [engine.url]
    assert failed_ids(redis_conn) == []
    output = worker.output()
    assert (
        f"IndexNow retry batch={batch_id} engine=127.0.0.1:{engine.port}/indexnow count=2 "
        in output
    )
    assert "status=429 attempt=2/3 in=2.0s" in output
    assert output.count(f"IndexNow POST batch={batch_id} ") == 2


def test_429_without_retry_after_backs_off_and_fails_after_max_attempts(
    engine, indexnow_settings, start_worker, redis_conn
):
    overrides = queue_settings(
        indexnow_settings, RETRY={**FAST_RETRY, "BASE_DELAY": 1, "MULTIPLIER": 2}
    )
    engine.default = Reply(429, body="slow down")
    dispatch(["/a/"])
    batch_id = only_queued_job(redis_conn).meta[META_BATCH_ID]
    worker = start_worker(overrides)

    jobs = wait_for_batch(redis_conn, batch_id, 3, "failed", timeout=20)
    assert len(engine.posts) == 3
    first_gap, second_gap = gaps(engine)
    assert first_gap >= 1.0  # BASE_DELAY
    assert second_gap >= 2.0  # BASE_DELAY x MULTIPLIER
    output = worker.output()
    assert "status=429 attempt=2/3 in=1.0s" in output
    assert "status=429 attempt=3/3 in=2.0s" in output
    assert [job.get_status() for job in jobs] == ["finished", "finished", "failed"]
    assert failed_ids(redis_conn) == [jobs[-1].id]
    text = exc_string(jobs[-1])
    assert "RetriesExhausted" in text
    assert "gave up after 3 attempts (RETRY['MAX_ATTEMPTS'] is 3)" in text
    assert "answered 429 (too many requests): slow down" in text

    # Requeued after the outage, it sends again and gets its attempts back.
    engine.default = Reply(200)
    engine.queue_replies(Reply(429, headers={"Retry-After": "1"}))
    requeue_job(jobs[-1].id, connection=redis_conn)
    wait_for_status(redis_conn, [jobs[-1].id], ["finished"])
    retry = wait_for_count(lambda: len(batch_jobs(redis_conn, batch_id)), 4)
    assert retry == 4
    again = batch_jobs(redis_conn, batch_id)
    new = [job for job in again if job.id not in {j.id for j in jobs}]
    assert [job.kwargs["attempt"] for job in new] == [2]
    wait_for_status(redis_conn, [new[0].id], ["finished"])
    assert len(engine.posts) == 5
    assert failed_ids(redis_conn) == []


def test_503_waits_server_error_delay_not_base_delay(
    engine, indexnow_settings, start_worker, redis_conn
):
    overrides = queue_settings(
        indexnow_settings, RETRY={**FAST_RETRY, "BASE_DELAY": 30, "SERVER_ERROR_DELAY": 1}
    )
    engine.queue_replies(Reply(503))
    dispatch(["/a/"])
    batch_id = only_queued_job(redis_conn).meta[META_BATCH_ID]
    worker = start_worker(overrides)

    wait_for_batch(redis_conn, batch_id, 2, "finished")
    [gap] = gaps(engine)
    assert gap >= 1.0
    assert "status=503 attempt=2/3 in=1.0s" in worker.output()  # not BASE_DELAY


def test_network_error_is_retried_then_fails_naming_the_count(
    indexnow_settings, start_worker, redis_conn
):
    from tests.services import free_port

    dead = f"http://127.0.0.1:{free_port()}/indexnow"
    overrides = queue_settings(
        indexnow_settings, ENGINES=[dead], RETRY={**FAST_RETRY, "MAX_ATTEMPTS": 2}
    )
    dispatch(["/a/"])
    batch_id = only_queued_job(redis_conn).meta[META_BATCH_ID]
    worker = start_worker(overrides)

    jobs = wait_for_batch(redis_conn, batch_id, 2, "failed")
    text = exc_string(jobs[-1])
    assert "gave up after 2 attempts" in text
    assert "network error (ConnectionError)" in text
    assert re.search(r"status=- attempt=2/2 in=\S+ job=\S+ error=ConnectionError", worker.output())


def test_403_fails_at_once_with_the_answer_the_hint_and_the_key_file_url_then_requeue_sends(
    engine, indexnow_settings, start_worker, redis_conn, redis_url
):
    overrides = queue_settings(indexnow_settings)
    engine.queue_replies(Reply(403, body="UserForbiddedToAccessSite"))
    dispatch(["/a/"])
    job = only_queued_job(redis_conn)
    start_worker(overrides)

    wait_for_status(redis_conn, [job.id], ["failed"])
    assert failed_ids(redis_conn) == [job.id]
    assert len(engine.posts) == 1
    text = exc_string(fetch(redis_conn, job.id))
    assert "SubmissionRejected" in text
    assert "UserForbiddedToAccessSite" in text
    assert "answered 403" in text
    assert "Run manage.py indexnow_check" in text
    assert "https://www.example.com/test….txt" in text and KEY not in text
    assert len(batch_jobs(redis_conn, job.meta[META_BATCH_ID])) == 1  # no retry

    # rq's own command line moves it back to the queue; the worker sends again.
    subprocess.run(
        [
            sys.executable,
            "-m",
            "rq.cli",
            "requeue",
            "--url",
            f"{redis_url}/0",
            "--queue",
            "default",
            job.id,
        ],
        check=True,
        capture_output=True,
    )
    wait_for_status(redis_conn, [job.id], ["finished"])
    assert [post.urls for post in engine.wait_for_posts(2)] == [[A], [A]]
    assert failed_ids(redis_conn) == []


@pytest.mark.parametrize("status", [400, 422])
def test_other_final_rejections_fail_without_key_url(
    status, engine, indexnow_settings, start_worker, redis_conn
):
    overrides = queue_settings(indexnow_settings)
    engine.queue_replies(Reply(status, body="nope"))
    dispatch(["/a/"])
    job = only_queued_job(redis_conn)
    start_worker(overrides)

    wait_for_status(redis_conn, [job.id], ["failed"])
    text = exc_string(fetch(redis_conn, job.id))
    assert f"answered {status}" in text
    assert "Run manage.py indexnow_check" in text
    assert ".txt" not in text


def test_a_rejection_carries_every_answer_that_failed_the_job_and_prints_them(
    engine, indexnow_settings
):
    """Two engines reject, a third asks for a retry at the last attempt: the error holds
    the three answers, each one quoted in its message, and survives pickling."""
    with LoopbackEngine() as second, LoopbackEngine() as third:
        indexnow_settings(
            ENGINES=[engine.url, second.url, third.url],
            RETRY={**FAST_RETRY, "MAX_ATTEMPTS": 2},
        )
        engine.queue_replies(Reply(403, body="UserForbiddedToAccessSite"))
        second.queue_replies(Reply(422, body="UrlsNotOnThisHost"))
        third.queue_replies(Reply(503, body="BusyTryLater"))
        with pytest.raises(SubmissionRejected) as caught:
            deliver([A, B], batch_id="b1", attempt=2)
        endpoints = [engine.url, second.url, third.url]

    error = caught.value
    answers = {r.engine.endpoint: (r.status, r.host, r.urls) for r in error.results}
    assert answers == {
        endpoints[0]: (403, "www.example.com", (A, B)),
        endpoints[1]: (422, "www.example.com", (A, B)),
        endpoints[2]: (503, "www.example.com", (A, B)),
    }
    assert [r.status for r in error.results][-1] == 503  # the rejections first
    assert (error.engine, error.status, error.host) == (
        error.results[0].engine.name,
        error.results[0].status,
        "www.example.com",
    )
    text = str(error)
    assert text.startswith("IndexNow batch b1 was rejected (attempt 2 of 2): ")
    for quoted in ("UserForbiddedToAccessSite", "UrlsNotOnThisHost", "BusyTryLater"):
        assert quoted in text
    assert "answered 503 (Service Unavailable): BusyTryLater (not retried). Run manage.py" in text
    assert text.count("Run manage.py indexnow_check") == 1
    assert "https://www.example.com/test….txt" in text and KEY not in text
    assert str(pickle.loads(pickle.dumps(error))) == text


def test_two_engines_retry_only_the_one_that_answered_429(
    engine, indexnow_settings, start_worker, redis_conn
):
    with LoopbackEngine() as second:
        overrides = queue_settings(indexnow_settings, ENGINES=[engine.url, second.url])
        second.queue_replies(Reply(429, headers={"Retry-After": "1"}))
        dispatch(["/a/", "/b/"])
        batch_id = only_queued_job(redis_conn).meta[META_BATCH_ID]
        start_worker(overrides)

        _, retry = wait_for_batch(redis_conn, batch_id, 2, "finished")
        assert [post.urls for post in second.wait_for_posts(2)] == [[A, B], [A, B]]
        assert [post.urls for post in engine.posts] == [[A, B]]
        assert retry.kwargs["engines"] == [second.url]
        assert retry.args == ([A, B],)


def test_site_verification_not_completed_is_retried(
    engine, indexnow_settings, start_worker, redis_conn
):
    overrides = queue_settings(indexnow_settings)
    engine.queue_replies(
        Reply(403, body='{"code":"SiteVerificationNotCompleted","message":"wait"}')
    )
    dispatch(["/a/"])
    batch_id = only_queued_job(redis_conn).meta[META_BATCH_ID]
    start_worker(overrides)

    jobs = wait_for_batch(redis_conn, batch_id, 2, "finished")
    assert [job.get_status() for job in jobs] == ["finished", "finished"]
    assert len(engine.posts) == 2
    assert failed_ids(redis_conn) == []


def test_retry_after_as_an_http_date(engine, indexnow_settings, start_worker, redis_conn):
    overrides = queue_settings(indexnow_settings, RETRY={**FAST_RETRY, "BASE_DELAY": 30})
    worker = start_worker(overrides)  # ready before the date is set
    due = int(time.time()) + 5  # HTTP dates have whole seconds
    engine.queue_replies(Reply(429, headers={"Retry-After": formatdate(due, usegmt=True)}))
    dispatch(["/a/"])
    wait_for_count(lambda: len(engine.posts), 1)
    (batch_id,) = {fetch(redis_conn, i).meta[META_BATCH_ID] for i in all_job_ids(redis_conn)}

    wait_for_batch(redis_conn, batch_id, 2, "finished", timeout=15)
    first, second = engine.posts
    assert first.received_at < due - 1
    assert due <= second.received_at
    # The delay is the time left to the date when the answer came, not BASE_DELAY.
    [delay] = re.findall(r"status=429 attempt=2/3 in=(\d+\.\d)s", worker.output())
    assert 0 < float(delay) <= 5
    assert first.received_at + float(delay) <= due + 0.05  # %.1f rounds


def test_max_delay_caps_retry_after(engine, indexnow_settings, start_worker, redis_conn):
    overrides = queue_settings(indexnow_settings, RETRY={**FAST_RETRY, "MAX_DELAY": 1})
    engine.queue_replies(Reply(429, headers={"Retry-After": "3600"}))
    dispatch(["/a/"])
    batch_id = only_queued_job(redis_conn).meta[META_BATCH_ID]
    worker = start_worker(overrides)

    wait_for_batch(redis_conn, batch_id, 2, "finished")
    [gap] = gaps(engine)
    assert gap >= 1.0
    assert "in=1.0s" in worker.output()  # MAX_DELAY, not the hour Retry-After asks


def test_two_workers_and_ten_jobs_send_each_url_once(
    engine, indexnow_settings, start_worker, redis_conn
):
    overrides = queue_settings(indexnow_settings, DEBOUNCE={"CACHE": "shared", "TTL": 600})
    urls = [f"/page/{i}/" for i in range(20)]
    # A slow engine keeps the first claims in flight while the other worker runs jobs.
    engine.default = Reply(200, delay=0.3)
    first = start_worker(overrides)
    second = start_worker(overrides)
    for _ in range(10):
        dispatch(urls)

    wait_for_count(lambda: len(finished_ids(redis_conn)), 10)
    assert sorted(engine.posted_urls()) == sorted(f"https://www.example.com{u}" for u in urls)
    done = {w.name: w.successful_job_count for w in RQWorker.all(connection=redis_conn)}
    assert done[first.name] > 0
    assert done[second.name] > 0
    assert done[first.name] + done[second.name] == 10
    assert failed_ids(redis_conn) == []


def test_a_retry_for_an_engine_no_longer_configured_is_dropped_with_a_warning(engine, caplog):
    gone = "http://127.0.0.1:9/indexnow"
    with caplog.at_level(logging.WARNING, logger="indexnow_django"):
        summary = deliver([A], batch_id="b1", attempt=2, engines=[gone])
    assert engine.posts == []
    assert summary == {
        "batch_id": "b1",
        "attempt": 2,
        "accepted": 0,
        "debounced": 0,
        "retry_jobs": [],
    }
    assert f"engine(s) {gone} no longer in INDEXNOW['ENGINES']" in caplog.text


@pytest.mark.parametrize("stop", ["kill", "cold_stop"])
def test_a_job_whose_whole_worker_died_mid_post_is_sent_by_another_worker(
    stop, engine, indexnow_settings, start_worker, redis_conn
):
    """While the engine holds the POST, the worker dies: ``kill`` is SIGKILL of the worker,
    its work horse and its scheduler; ``cold_stop`` is rq's cold shutdown (two SIGTERMs:
    rq kills the work horse and exits). Either way rq would leave the job "started"
    for about 13 minutes and never retry it."""
    from rq.exceptions import NoSuchJobError

    overrides = queue_settings(
        indexnow_settings, HTTP={"TIMEOUT": 30}, DEBOUNCE={"CACHE": "shared", "TTL": 600}
    )
    engine.queue_replies(Reply(200, delay=25))  # answered after the worker is gone
    dispatch(["/a/"])
    job = only_queued_job(redis_conn)
    batch_id = job.meta[META_BATCH_ID]
    doomed = start_worker(overrides, extra_env=FAST_SWEEP)
    engine.wait_for_posts(1, timeout=20)
    start_worker(overrides, extra_env=FAST_SWEEP)  # the one left running

    getattr(doomed, stop)()
    if stop == "cold_stop":
        assert "cold shut down" in doomed.output()

    # Sent again within the bound documented, 2 minutes (seconds with FAST_SWEEP).
    [successor] = wait_for_batch(redis_conn, batch_id, 1, "finished", timeout=120)
    posts = engine.wait_for_posts(2, timeout=5)
    assert [post.urls for post in posts] == [[A], [A]]
    assert successor.id != job.id
    assert successor.meta[META_ATTEMPT] == 2
    assert successor.kwargs == {"batch_id": batch_id, "attempt": 2, "force": False}
    assert successor.latest_result().return_value["accepted"] == 1
    with pytest.raises(NoSuchJobError):
        fetch(redis_conn, job.id)  # gone from rq, not left "started"
    wait_until_idle(redis_conn)  # no job is left that could send
    assert len(engine.posts) == 2  # sent again once only
    assert failed_ids(redis_conn) == []


def test_a_worker_killed_at_the_last_attempt_fails_the_job_naming_the_count(
    engine, indexnow_settings, start_worker, redis_conn
):
    overrides = queue_settings(
        indexnow_settings, HTTP={"TIMEOUT": 30}, RETRY={**FAST_RETRY, "MAX_ATTEMPTS": 1}
    )
    engine.queue_replies(Reply(200, delay=25))
    dispatch(["/a/"])
    job = only_queued_job(redis_conn)
    doomed = start_worker(overrides, extra_env=FAST_SWEEP)
    engine.wait_for_posts(1, timeout=20)
    start_worker(overrides, extra_env=FAST_SWEEP)

    doomed.kill()

    wait_for_status(redis_conn, [job.id], ["failed"], timeout=120)
    text = exc_string(fetch(redis_conn, job.id))
    assert "gave up after 1 attempts (RETRY['MAX_ATTEMPTS'] is 1)" in text
    assert f"worker {doomed.name} died" in text
    assert failed_ids(redis_conn) == [job.id]
    assert len(engine.posts) == 1


def test_two_endpoints_on_one_host_are_two_engines_and_only_the_second_is_retried(
    engine, indexnow_settings, start_worker, redis_conn
):
    """One server, one port, two paths: one accepts, the other answers 429 (the two POSTs
    go out at once: either may be the one)."""
    first, second = engine.url, engine.url.replace("/indexnow", "/second")
    overrides = queue_settings(
        indexnow_settings, ENGINES=[first, second], DEBOUNCE={"CACHE": "shared", "TTL": 600}
    )
    engine.queue_replies(Reply(200), Reply(429, headers={"Retry-After": "1"}))
    dispatch(["/a/", "/b/"])
    batch_id = only_queued_job(redis_conn).meta[META_BATCH_ID]
    start_worker(overrides)

    _, retry = wait_for_batch(redis_conn, batch_id, 2, "finished")
    posts = [(post.path, post.urls, post.reply.status) for post in engine.wait_for_posts(3)]
    assert sorted(path for path, _, _ in posts[:2]) == ["/indexnow", "/second"]
    [refused] = [path for path, _, status in posts[:2] if status == 429]
    assert posts[2] == (refused, [A, B], 200)
    assert retry.kwargs["engines"] == [first if refused == "/indexnow" else second]
    assert retry.meta[META_ATTEMPT] == 2


TENANTS = [f"t{i}.tenants.test" for i in range(200)]


def test_a_flush_on_200_hosts_is_all_delivered_by_a_10_second_job(
    engine, indexnow_settings, start_worker, redis_conn
):
    """One POST per host, each answered in 0.1 s: one after another they would outlive
    the job (rq killed it after 91 hosts); a few at a time they fit."""
    overrides = queue_settings(
        indexnow_settings, HOSTS=TENANTS, QUEUE={"TIMEOUT": 10, "RESULT_TTL": 600}
    )
    engine.queue_replies(*[Reply(200, delay=0.1)] * len(TENANTS))
    dispatch([f"https://{host}/p/" for host in TENANTS])
    [job] = [fetch(redis_conn, job_id) for job_id in all_job_ids(redis_conn)]
    start_worker(overrides)

    wait_for_status(redis_conn, [job.id], ["finished"], timeout=30)
    posts = engine.posts
    assert sorted(post.json["host"] for post in posts) == sorted(TENANTS)
    assert all(post.urls == [f"https://{post.json['host']}/p/"] for post in posts)
    assert failed_ids(redis_conn) == []


def test_a_job_near_its_timeout_hands_what_is_left_to_a_new_job(
    engine, indexnow_settings, start_worker, redis_conn
):
    """200 hosts answered in 0.4 s each are 10 s of POSTs even eight at a time: the job
    stops starting POSTs at 6 s of its 10 and a new job of the batch sends the rest."""
    overrides = queue_settings(
        indexnow_settings, HOSTS=TENANTS, QUEUE={"TIMEOUT": 10, "RESULT_TTL": 600}
    )
    engine.queue_replies(*[Reply(200, delay=0.4)] * len(TENANTS))
    dispatch([f"https://{host}/p/" for host in TENANTS])
    [job] = [fetch(redis_conn, job_id) for job_id in all_job_ids(redis_conn)]
    worker = start_worker(overrides)

    engine.wait_for_posts(len(TENANTS), timeout=60)
    jobs = wait_for_batch(redis_conn, job.meta[META_BATCH_ID], 2, "finished", timeout=30)
    first = fetch(redis_conn, job.id)
    result = first.latest_result().return_value
    assert result["handed_over"] == [other.id for other in jobs if other.id != job.id]
    assert sorted(post.json["host"] for post in engine.posts) == sorted(TENANTS)
    assert failed_ids(redis_conn) == []
    assert "near its timeout" in worker.output()
