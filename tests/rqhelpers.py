"""Reading rq's state in tests: jobs, registries, and waiting for a job to end."""

from __future__ import annotations

import json
import re
import subprocess
import sys
import time
from collections.abc import Callable, Iterable
from typing import Any

import django_rq
import redis
from rq.job import Job, JobStatus
from rq.registry import (
    DeferredJobRegistry,
    FailedJobRegistry,
    FinishedJobRegistry,
    ScheduledJobRegistry,
    StartedJobRegistry,
)

from indexnow_django.transports.rq.queue import META_ATTEMPT, META_BATCH_ID

QUEUE = "default"

FAST_RETRY = {
    "MAX_ATTEMPTS": 3,
    "BASE_DELAY": 1,
    "MULTIPLIER": 1,
    "MAX_DELAY": 10,
    "SERVER_ERROR_DELAY": 1,
}

#: The environment of a worker whose dead peers' jobs are found within seconds: it looks
#: every second (not 10), and heartbeats last 4 seconds (not 15). Give it to every worker
#: of the test, the one that dies too (its heartbeats are the ones that must lapse).
FAST_SWEEP = {"INDEXNOW_SWEEP_EVERY": "1", "INDEXNOW_HEARTBEAT_TTL": "4"}


def queue_job_ids(conn: redis.Redis) -> list[str]:
    """Ids of the jobs waiting in the queue (not scheduled, not started)."""
    return list(django_rq.get_queue(QUEUE, connection=conn).job_ids)


def all_job_ids(conn: redis.Redis) -> set[str]:
    """Every job the queue knows: waiting, scheduled, started, finished, failed."""
    ids = set(queue_job_ids(conn))
    for registry_class in (
        ScheduledJobRegistry,
        StartedJobRegistry,
        FinishedJobRegistry,
        FailedJobRegistry,
    ):
        ids.update(registry_class(QUEUE, connection=conn).get_job_ids())
    return ids


def fetch(conn: redis.Redis, job_id: str) -> Job:
    return Job.fetch(job_id, connection=conn)


def batch_jobs(conn: redis.Redis, batch_id: str) -> list[Job]:
    """The jobs of one batch, by attempt."""
    jobs = [job for job in Job.fetch_many(list(all_job_ids(conn)), connection=conn) if job]
    jobs = [job for job in jobs if job.meta.get(META_BATCH_ID) == batch_id]
    return sorted(jobs, key=lambda job: job.meta.get(META_ATTEMPT, 0))


def only_queued_job(conn: redis.Redis) -> Job:
    ids = queue_job_ids(conn)
    assert len(ids) == 1, ids
    return fetch(conn, ids[0])


def failed_ids(conn: redis.Redis) -> list[str]:
    return FailedJobRegistry(QUEUE, connection=conn).get_job_ids()


def finished_ids(conn: redis.Redis) -> list[str]:
    return FinishedJobRegistry(QUEUE, connection=conn).get_job_ids()


def wait_for_status(
    conn: redis.Redis, job_ids: Iterable[str], statuses: Iterable[str], timeout: float = 20.0
) -> dict[str, str]:
    """Block until every job has one of ``statuses``; return their statuses."""
    wanted = {JobStatus(s) for s in statuses}
    ids = list(job_ids)
    deadline = time.monotonic() + timeout
    while True:
        current = {job_id: fetch(conn, job_id).get_status() for job_id in ids}
        if all(status in wanted for status in current.values()):
            return {job_id: str(status.value) for job_id, status in current.items()}
        if time.monotonic() > deadline:
            raise AssertionError(f"jobs not {sorted(wanted)} after {timeout:g}s: {current}")
        time.sleep(0.05)


def wait_for_batch(
    conn: redis.Redis, batch_id: str, count: int, status: str, timeout: float = 20.0
) -> list[Job]:
    """Block until the batch has ``count`` jobs and the last one has ``status``."""
    deadline = time.monotonic() + timeout
    while True:
        jobs = batch_jobs(conn, batch_id)
        if len(jobs) >= count and jobs[-1].get_status() == JobStatus(status):
            return jobs
        if time.monotonic() > deadline:
            states = [(job.id, job.meta.get(META_ATTEMPT), job.get_status()) for job in jobs]
            raise AssertionError(f"batch {batch_id}: {states} after {timeout:g}s")
        time.sleep(0.05)


def wait_for_count(count_of: Callable[[], int], count: int, timeout: float = 20.0) -> int:
    """Block until ``count_of()`` reaches ``count``; return it."""
    deadline = time.monotonic() + timeout
    while True:
        current = count_of()
        if current >= count:
            return current
        if time.monotonic() > deadline:
            raise AssertionError(f"{current} of {count} after {timeout:g}s")
        time.sleep(0.05)


def unfinished_ids(conn: redis.Redis) -> list[str]:
    """The jobs the queue may still run: waiting (or taken by a worker and not yet
    started), scheduled, deferred or started."""
    queue = django_rq.get_queue(QUEUE, connection=conn)
    ids = [*queue.job_ids, *(i.decode() for i in conn.lrange(queue.intermediate_queue_key, 0, -1))]
    for registry_class in (ScheduledJobRegistry, DeferredJobRegistry, StartedJobRegistry):
        # Read only: rq's cleanup of the started registry would fail a dead worker's job.
        ids.extend(registry_class(QUEUE, connection=conn).get_job_ids(cleanup=False))
    return ids


def wait_until_idle(
    conn: redis.Redis, also: Callable[[], bool] = lambda: True, timeout: float = 60.0
) -> None:
    """Block until the queue has no job it may still run (and ``also()`` holds, for what
    else could send: URLs pending in a coalescing window, a kept row): whatever was going
    to reach the engine has reached it, and no POST comes after."""
    deadline = time.monotonic() + timeout
    while True:
        left = unfinished_ids(conn)
        if not left and also():
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"not idle after {timeout:g}s: jobs {left}, also() {also()}")
        time.sleep(0.05)


def exc_string(job: Job) -> str:
    """The traceback rq kept for a failed job."""
    result = job.latest_result()
    text: Any = result.exc_string if result is not None else job.exc_info
    return str(text or "")


def stream_from_processes(
    overrides: dict[str, Any], starts: Iterable[int], count: int, pause: float, window: float
) -> set[int]:
    """Flush ``https://www.example.com/p/{i}/`` for ``count`` values of ``i`` from each of
    ``starts``, one every ``pause`` seconds, each series in a ``django shell`` process of
    its own with ``overrides``; the coalescing windows (of ``window`` seconds) the flushes
    fell in, as each process saw them (a flush's window is read from the clock)."""
    from tests.services import ROOT, django_env

    code = (
        "import time\n"
        "from indexnow_django.units.dispatch import dispatch\n"
        f"for i in range(START, START + {count}):\n"
        "    before = time.time()\n"
        "    dispatch([f'https://www.example.com/p/{i}/'])\n"
        f"    print(int(before // {window}), int(time.time() // {window}))\n"
        f"    time.sleep({pause})\n"
    )
    env = django_env(INDEXNOW_TEST_OVERRIDES=json.dumps(overrides))
    processes = [
        subprocess.Popen(
            [sys.executable, "-m", "django", "shell", "-c", code.replace("START", str(start))],
            cwd=ROOT,
            env=env,
            stdout=subprocess.PIPE,
            text=True,
        )
        for start in starts
    ]
    windows: set[int] = set()
    for process in processes:
        output, _ = process.communicate(timeout=60)
        assert process.returncode == 0
        flushed = re.findall(r"^(\d+) (\d+)$", output, re.MULTILINE)
        assert len(flushed) == count, output
        for first, last in flushed:
            windows.update(range(int(first), int(last) + 1))
    return windows
