"""The worker class: a job of the site's own that saves tracked objects gets its URLs
flushed once, when it ends; and the check that says when the worker is not wired."""

from __future__ import annotations

import json
from typing import Any

import django_rq
import pytest
from django.core import checks
from rq.worker import SimpleWorker as RQSimpleWorker
from rq.worker import Worker as RQWorker

from indexnow_django import worker as worker_module
from indexnow_django.checks import check_queue_wiring, check_transport
from indexnow_django.jobs import deliver
from indexnow_django.transports.rq import wiring
from indexnow_django.transports.rq.queue import META_BATCH_ID
from indexnow_django.units.dispatch import dispatch
from tests.needs import ONE_JOB
from tests.rqhelpers import (
    failed_ids,
    fetch,
    finished_ids,
    wait_for_count,
    wait_for_status,
    wait_until_idle,
)
from tests.testapp.jobs import (
    save_pages,
    save_pages_in_a_rolled_back_transaction,
    save_pages_then_fail,
)

PATHS = ["/one/", "/two/", "/three/"]
URLS = [f"https://www.example.com{path}" for path in PATHS]
#: A job per flush (no coalescing window): these tests count the flushes a job's saves make.
QUEUE_SETTINGS = {**ONE_JOB, "DEBOUNCE": {"CACHE": "shared"}}


def delivery_jobs(conn: Any) -> list[Any]:
    jobs = [fetch(conn, job_id) for job_id in finished_ids(conn) + failed_ids(conn)]
    return [job for job in jobs if job.func is deliver]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize(
    "worker_class", ["indexnow_django.worker.Worker", "indexnow_django.worker.SimpleWorker"]
)
def test_a_site_job_saving_objects_gives_one_follow_up_post(
    worker_class, engine, start_worker, redis_conn
):
    start_worker(QUEUE_SETTINGS, extra_args=["--worker-class", worker_class])
    job = django_rq.get_queue("default").enqueue(save_pages, PATHS)

    wait_for_status(redis_conn, [job.id], ["finished"])
    [post] = engine.wait_for_posts(1)
    assert post.urls == URLS
    wait_for_count(lambda: len(delivery_jobs(redis_conn)), 1)
    assert len(delivery_jobs(redis_conn)) == 1
    assert len(engine.posts) == 1


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_without_the_worker_class_each_save_is_sent_on_its_own(engine, start_worker, redis_conn):
    """The contrast that makes the one line worth adding."""
    start_worker(QUEUE_SETTINGS, extra_args=["--worker-class", "rq.Worker"])
    job = django_rq.get_queue("default").enqueue(save_pages, PATHS)

    wait_for_status(redis_conn, [job.id], ["finished"])
    posts = engine.wait_for_posts(3)
    assert [post.urls for post in posts] == [[url] for url in URLS]


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_local_memory_cache_debounces_nothing_even_with_one_worker(
    engine, start_worker, indexnow_settings, redis_conn
):
    """What indexnow.W002 says: each job runs in a new process, with an empty LocMem cache."""
    settings = {"DISPATCH": "queue"}  # tests.settings' "default" cache is a LocMemCache
    indexnow_settings(**settings)
    [warning] = [m for m in check_queue_wiring() if m.id == "indexnow.W002"]
    assert "even with a single worker" in warning.msg
    start_worker(settings)
    for edit in range(1, 4):
        dispatch(["/edited-three-times/"])
        engine.wait_for_posts(edit)
    assert [post.urls for post in engine.posts] == [
        ["https://www.example.com/edited-three-times/"]
    ] * 3


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_failing_job_still_submits_what_it_committed(engine, start_worker, redis_conn):
    start_worker(QUEUE_SETTINGS)
    queue = django_rq.get_queue("default")
    failing = queue.enqueue(save_pages_then_fail, PATHS)
    rolled_back = queue.enqueue(save_pages_in_a_rolled_back_transaction, ["/never/"])

    wait_for_status(redis_conn, [failing.id], ["failed"])
    wait_for_status(redis_conn, [rolled_back.id], ["finished"])
    [post] = engine.wait_for_posts(1)
    assert post.urls == URLS
    wait_for_count(lambda: len(delivery_jobs(redis_conn)), 1)
    [delivery] = delivery_jobs(redis_conn)
    assert delivery.meta[META_BATCH_ID]
    assert len(engine.posts) == 1


# Wiring and its check ----------------------------------------------------------


class OwnWorker(worker_module.UnitOfWorkMixin, RQWorker):
    pass


@pytest.mark.parametrize(
    "value",
    [
        "indexnow_django.worker.Worker",
        "indexnow_django.worker.SimpleWorker",
        "tests.test_worker.OwnWorker",
        worker_module.Worker,
    ],
)
def test_wired(settings, value):
    settings.RQ = {"WORKER_CLASS": value}
    assert wiring.is_wired()


@pytest.mark.parametrize(
    ("rq_setting", "path"),
    [
        ({}, "rq.worker.worker_classes.Worker"),
        ({"WORKER_CLASS": "rq.worker.SimpleWorker"}, "rq.worker.SimpleWorker"),
        ({"WORKER_CLASS": RQSimpleWorker}, "rq.worker.worker_classes.SimpleWorker"),
    ],
)
def test_not_wired_is_a_warning_with_the_one_line(settings, indexnow_settings, rq_setting, path):
    settings.RQ = rq_setting
    indexnow_settings(DISPATCH="queue", DEBOUNCE={"CACHE": "shared"})
    assert not wiring.is_wired()
    assert wiring.configured_worker_class()[0] == path
    assert check_transport() == [
        checks.Warning(
            f"INDEXNOW dispatches to a queue but the rq worker class {path!r} does not run each "
            "job in a unit of work: URLs that your jobs' saves produce are not submitted.",
            hint='Add RQ = {"WORKER_CLASS": "indexnow_django.worker.Worker"} to your settings, '
            "or add indexnow_django.worker.UnitOfWorkMixin to your own worker class.",
            id="indexnow.W001",
        )
    ]


def test_unimportable_worker_class_is_a_warning(settings, indexnow_settings):
    settings.RQ = {"WORKER_CLASS": "myproject.nowhere.Worker"}
    indexnow_settings(DISPATCH="queue", DEBOUNCE={"CACHE": "shared"})
    [warning] = check_transport()
    assert warning.id == "indexnow.W001"
    assert "'myproject.nowhere.Worker' cannot be imported" in warning.msg


def test_no_worker_warning_with_sync_dispatch(settings, indexnow_settings):
    settings.RQ = {}
    indexnow_settings(DISPATCH="sync")
    assert check_transport() == []


def test_the_line_users_add():
    assert wiring.WORKER_CLASS_LINE == 'RQ = {"WORKER_CLASS": "indexnow_django.worker.Worker"}'


@pytest.mark.parametrize(
    ("value", "sweep", "heartbeat"),
    [(None, 10, 15), ("2", 2, 2), (" 3 ", 3, 3), ("0", 10, 15), ("1.5", 10, 15), ("²", 10, 15)],
)
def test_the_intervals_a_test_may_shorten(monkeypatch, value, sweep, heartbeat):
    """``INDEXNOW_SWEEP_EVERY`` and ``INDEXNOW_HEARTBEAT_TTL`` take whole seconds; anything
    else leaves the defaults."""
    from indexnow_django.transports.rq import queue

    for name in ("INDEXNOW_SWEEP_EVERY", "INDEXNOW_HEARTBEAT_TTL"):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    assert wiring.sweep_every() == sweep
    assert queue.heartbeat_ttl() == heartbeat


@pytest.mark.worker
def test_a_scheduler_process_that_died_is_started_again_and_retries_run(
    engine, indexnow_settings, start_worker, redis_conn
):
    """A Redis restart may end the worker's scheduler process; rq would start it again
    in its maintenance only, 10 minutes later, and retries would wait until then."""
    import os
    import signal

    from indexnow_django.testing import Reply
    from indexnow_django.units.dispatch import dispatch
    from tests.rqhelpers import FAST_RETRY, FAST_SWEEP, wait_for_count

    overrides = {"DISPATCH": "queue", "RETRY": FAST_RETRY}
    indexnow_settings(**overrides)
    worker = start_worker(overrides, extra_env=FAST_SWEEP)
    # An idle worker's one child is its scheduler, started just after the worker is ready.
    wait_for_count(lambda: len(worker.children()), 1)
    [scheduler] = worker.children()
    os.kill(scheduler, signal.SIGKILL)

    engine.queue_replies(Reply(429, headers={"Retry-After": "1"}))
    dispatch(["/a/"])

    posts = engine.wait_for_posts(2, timeout=30)
    assert [(post.urls, post.reply.status) for post in posts] == [
        (["https://www.example.com/a/"], 429),
        (["https://www.example.com/a/"], 200),
    ]
    assert "the scheduler of this worker died; starting it again" in worker.output()


# A lost scheduler, a lost Redis ---------------------------------------------------


@pytest.mark.worker
def test_a_worker_takes_over_the_scheduler_lock_of_a_worker_that_died(
    engine, indexnow_settings, start_worker, redis_conn
):
    """The lock of a scheduler killed with its worker outlives it by a minute, and rq's
    worker asks for it again only in its 10-minute maintenance: retries would wait."""
    import time

    from rq.scheduler import RQScheduler

    from indexnow_django.testing import Reply
    from indexnow_django.units.dispatch import dispatch
    from tests.rqhelpers import FAST_RETRY, FAST_SWEEP

    overrides = {"DISPATCH": "queue", "RETRY": FAST_RETRY}
    indexnow_settings(**overrides)
    lock = RQScheduler.get_locking_key("default")
    holder = start_worker(overrides)
    dead_holder = redis_conn.get(lock)
    other = start_worker(overrides, extra_env=FAST_SWEEP)
    assert redis_conn.get(lock) == dead_holder

    holder.kill()
    killed = time.monotonic()
    deadline = killed + wiring.SWEEP_EVERY + 15
    while redis_conn.get(lock) in (dead_holder, None) and time.monotonic() < deadline:
        time.sleep(0.1)
    taken_after = time.monotonic() - killed

    assert redis_conn.get(lock) not in (dead_holder, None), "the dead holder's lock stayed"
    assert taken_after < wiring.SWEEP_EVERY + 5
    assert "took over the scheduler lock of queue default" in other.output()
    # The new scheduler runs retries.
    engine.queue_replies(Reply(429, headers={"Retry-After": "1"}))
    dispatch(["/a/"])
    posts = engine.wait_for_posts(2, timeout=30)
    assert [post.reply.status for post in posts] == [429, 200]


@pytest.fixture
def sentinel_group():
    """A master, its replica and a Sentinel of this test's own (tests/services.py)."""
    from tests.services import SentinelGroup

    group = SentinelGroup().start()
    yield group
    group.stop()


@pytest.mark.worker
def test_a_sentinel_failover_while_a_job_runs_leaves_the_worker_and_its_retries_running(
    engine, indexnow_settings, settings, start_worker, sentinel_group, capsys
):
    """The master is SIGKILLed while the worker's job waits for the engine; the Sentinel
    promotes the replica. The worker stays up, its scheduler runs again on the new
    master, and a retry scheduled before the failover is sent in time."""
    import json
    import sys
    import time

    import redis
    from rq.registry import ScheduledJobRegistry
    from rq.scheduler import RQScheduler

    from indexnow_django.testing import Reply
    from indexnow_django.units.dispatch import dispatch
    from tests.rqhelpers import FAST_RETRY

    queue_config = sentinel_group.rq_queue()
    settings.RQ_QUEUES = {"default": queue_config}
    overrides = {"DISPATCH": "queue", "RETRY": FAST_RETRY, "DEBOUNCE": {"CACHE": "shared"}}
    indexnow_settings(**overrides)
    master = redis.Redis(port=sentinel_group.master.port)
    new_master = redis.Redis(port=sentinel_group.replica.port)
    worker = start_worker(
        overrides,
        extra_env={"INDEXNOW_TEST_SETTINGS": json.dumps({"RQ_QUEUES": {"default": queue_config}})},
        conn=master,
    )
    retry_after = 8
    hold = 2.0  # the engine answers the job running at the failover this late
    engine.queue_replies(Reply(429, headers={"Retry-After": str(retry_after)}), Reply(delay=hold))

    dispatch(["/retried/"])
    [refused] = engine.wait_for_posts(1)
    due = refused.received_at + retry_after
    scheduled = ScheduledJobRegistry("default", connection=master)
    deadline = time.monotonic() + 10
    while not scheduled.count and time.monotonic() < deadline:
        time.sleep(0.05)
    assert scheduled.count == 1
    assert master.wait(1, 5000) == 1  # the replica has it

    dispatch(["/running/"])
    engine.wait_for_posts(2)  # the job now waits for the engine's answer
    sentinel_group.master.kill()
    killed = time.time()
    deadline = time.monotonic() + 30
    while sentinel_group.master_port() != sentinel_group.replica.port:
        assert time.monotonic() < deadline, "the Sentinel promoted no replica"
        time.sleep(0.05)
    promoted = time.time()

    scheduler_back = None
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        holder = new_master.get(RQScheduler.get_locking_key("default"))
        if holder is not None:
            beat = RQScheduler.fetch(holder.decode(), new_master).last_heartbeat
            if beat is not None and beat.timestamp() > promoted:
                scheduler_back = time.time()
                break
        time.sleep(0.1)
    # In time: by 30 s after its due time, the wait's deadline.
    posts = engine.wait_for_posts(3, timeout=max(due + 30 - time.time(), 1))

    assert scheduler_back is not None, "no scheduler beat on the new master"
    retried = [post for post in posts[2:] if post.json["urlList"] == [refused.json["urlList"][0]]]
    assert retried, [post.json["urlList"] for post in posts]
    late = retried[0].received_at - due
    assert worker.running(), worker.output()
    assert "quitting" not in worker.output()
    # The job that ran through the failover is sent once (its end is recorded, or it
    # is found without a heartbeat and its resend is debounced): once no job is left on
    # the new master that could send.
    wait_until_idle(new_master)
    urls = [url for post in engine.posts for url in post.json["urlList"]]
    assert urls.count("https://www.example.com/running/") == 1
    with capsys.disabled():  # the figures, for whoever runs it with -s
        sys.stdout.write(
            f"\nfailover: promoted {promoted - killed:.1f}s after the kill, scheduler beating "
            f"on the new master {scheduler_back - killed:.1f}s after it, retry sent "
            f"{late:+.1f}s from its due time\n"
        )


def test_the_settings_fingerprint_is_the_same_in_every_process(settings):
    """Equal settings, equal fingerprint, also with a function in them (whose repr differs
    from one process to the next); another DRY_RUN, another fingerprint."""
    from indexnow_django.conf import settings_fingerprint
    from tests.services import run_django
    from tests.testapp.tenants import hosts

    settings.INDEXNOW = {**settings.INDEXNOW, "HOSTS": hosts}
    here = settings_fingerprint()
    code = (
        "import json; from django.conf import settings; from indexnow_django.conf import "
        "settings_fingerprint; from tests.testapp.tenants import hosts; "
        "settings.INDEXNOW = {**settings.INDEXNOW, 'HOSTS': hosts}; "
        "print(json.dumps(settings_fingerprint()))"
    )
    result = run_django("shell", "-c", code)
    assert result.returncode == 0, result.stderr
    assert json.loads(result.stdout.strip().splitlines()[-1]) == here
    settings.INDEXNOW = {**settings.INDEXNOW, "DRY_RUN": True}
    assert settings_fingerprint()["fingerprint"] != here["fingerprint"]
    assert settings_fingerprint()["DRY_RUN"] is True


@pytest.mark.worker
def test_a_job_stranded_by_a_full_redis_is_sent_once_when_redis_has_room(
    engine, indexnow_settings, settings, start_worker, private_redis
):
    """A worker took a delivery job (rq's intermediate queue), then Redis filled up
    (maxmemory, noeviction) before the job could be started: the worker rides out the
    refused writes, and once Redis has room the job is put back and sent, once."""
    import json

    import redis

    from indexnow_django.conf import get_settings
    from indexnow_django.transports.rq.queue import get_queue
    from indexnow_django.units.dispatch import dispatch

    queues = {"default": {"URL": f"{private_redis.url}/0"}}
    settings.RQ_QUEUES = queues
    overrides = ONE_JOB
    indexnow_settings(**overrides)
    conn = redis.Redis.from_url(f"{private_redis.url}/0")
    queue = get_queue(get_settings())
    # What a worker does when it takes a job, replayed before any worker waits on the
    # queue: the job is in rq's intermediate queue. Redis fills up before it starts.
    dispatch(["/stranded/"])
    taken = conn.lmove(queue.key, queue.intermediate_queue_key)
    assert taken is not None
    worker = start_worker(
        overrides,
        extra_env={
            "INDEXNOW_TEST_SETTINGS": json.dumps({"RQ_QUEUES": queues}),
            "INDEXNOW_SWEEP_EVERY": "1",
            "INDEXNOW_HEARTBEAT_TTL": "3",
        },
        conn=conn,
    )
    conn.config_set("maxmemory", 1)  # noeviction: every write is refused

    # The worker looks for the stranded job and cannot put it back: it rides that out.
    worker.wait_for_output("lost Redis during the look for orphaned jobs (OutOfMemoryError")
    assert engine.posts == []
    assert conn.lrange(queue.intermediate_queue_key, 0, -1) == [taken]
    conn.config_set("maxmemory", 0)  # room again

    [post] = engine.wait_for_posts(1, timeout=30)
    assert post.urls == ["https://www.example.com/stranded/"]
    wait_until_idle(conn)  # no job is left that could send
    assert len(engine.posts) == 1
    assert conn.llen(queue.intermediate_queue_key) == 0
    assert worker.running(), worker.output()
    assert "quitting" not in worker.output()
    assert "put back batch=" in worker.output()


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)  # its workers write to the database too
def test_a_worker_registers_again_after_a_redis_restart_and_the_check_sees_it(
    engine, indexnow_settings, settings, start_worker, private_redis
):
    """Redis restarted without persistence loses rq's registry of workers: the worker
    that reconnects registers again, so indexnow_check does not ask for a second one."""
    import json
    import time
    from io import StringIO

    import redis
    from django.core.management import call_command
    from rq.worker import Worker as RQWorker

    from tests.rqhelpers import FAST_SWEEP

    queues = {"default": {"URL": f"{private_redis.url}/0"}}
    settings.RQ_QUEUES = queues
    overrides = {"DISPATCH": "queue", "DEBOUNCE": {"CACHE": "shared"}}
    indexnow_settings(**overrides)
    conn = redis.Redis.from_url(f"{private_redis.url}/0")
    worker = start_worker(
        overrides,
        extra_env={**FAST_SWEEP, "INDEXNOW_TEST_SETTINGS": json.dumps({"RQ_QUEUES": queues})},
        conn=conn,
    )

    private_redis.stop()
    private_redis.start()  # the same port, nothing kept
    assert RQWorker.all(connection=conn) == []
    deadline = time.monotonic() + 30
    while worker.name not in {w.name for w in RQWorker.all(connection=conn)}:
        assert worker.running(), worker.output()
        assert time.monotonic() < deadline, f"not registered again:\n{worker.output()}"
        time.sleep(0.1)

    out = StringIO()
    call_command("indexnow_check", "--offline", stdout=out, no_color=True)
    output = out.getvalue()
    assert "1 worker(s) listen on queue 'default'" in output
    assert "no worker listens" not in output
    assert f"worker {worker.name} was no longer registered in Redis" in worker.output()
    dispatch(["/after-restart/"])
    [post] = engine.wait_for_posts(1, timeout=30)
    assert post.urls == ["https://www.example.com/after-restart/"]
