"""A 10,000-URL flush delivered by an rq worker and by django-tasks-db's ``db_worker``.

For each transport, in one run on one machine: the time from the end of the
unit of work (its commit) to the POST reaching the engine, the time the
flush itself takes in the process that commits (the enqueue: what a request
pays), and the worker's time for the delivery (from the job's or the task's
start to its end: the debounce claims of 10,000 URLs, the POST, the bookkeeping).

* ``rq``: ``DISPATCH: "queue"``, ``rqworker --with-scheduler`` with the package's
  worker class, the debounce store on Django's ``RedisCache``;
* ``tasks-db``: ``DISPATCH: "tasks"`` on django-tasks-db with SQLite, ``db_worker``
  (polling every ``--interval`` seconds, 1 by default as in django-tasks-db),
  the debounce store on Django's ``DatabaseCache``: a site without Redis;
* ``tasks-db/locmem-cache``: the same with the debounce store in the worker's
  memory (``LocMemCache``: right for a single worker only);
* ``tasks-db/redis-cache``: the same with the debounce store on Redis, to tell
  the transport's cost from the cache's.

Each flush carries new URLs (nothing is debounced); each transport runs
``--runs`` flushes (default 5), and the median, lowest and highest are shown.
The engine is a loopback server that answers 200 at once; the throttle is off
(it spaces POSTs alike whatever carries them). Run from the
repository root::

    .venv/bin/python benchmarks/bench_tasks.py
    .venv/bin/python benchmarks/bench_tasks.py --runs 9 --interval 0.1
"""

from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_submit import redis_database  # noqa: E402

from indexnow_django.testing import LoopbackEngine  # noqa: E402

FLUSH = 10_000


def env_for(base: dict[str, str], debounce: str, dispatch: str) -> dict[str, str]:
    env = dict(base)
    env.update(BENCH_DEBOUNCE=debounce, BENCH_DISPATCH=dispatch)
    return env


@contextlib.contextmanager
def worker(command: list[str], env: dict[str, str], log: Path) -> Iterator[subprocess.Popen[bytes]]:
    with log.open("wb") as out:
        proc = subprocess.Popen(
            [sys.executable, "-m", "django", *command],
            cwd=ROOT,
            env=env,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    try:
        yield proc
    finally:
        proc.terminate()
        try:
            proc.wait(15)
        except subprocess.TimeoutExpired:
            proc.kill()
            proc.wait(5)


def wait_for(text: str, log: Path, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while text not in log.read_text(errors="replace"):
        if time.monotonic() > deadline:
            sys.exit(f"{text!r} not in {log} after {timeout}s:\n{log.read_text()}")
        time.sleep(0.05)


def flush(prefix: str) -> float:
    """One unit of work of FLUSH new URLs; returns its commit time (the flush starts)."""
    from indexnow_django import batch, submit

    urls = [f"https://www.example.com/{prefix}/{i}/" for i in range(FLUSH)]
    with batch():
        submit(urls)
        committed = time.time()
    return committed


def rq_worker_time(run: int, before: int) -> float | None:
    """The worker time of the run's job, once it ended (the newest of the finished ones)."""
    import django_rq
    from rq.job import Job

    queue = django_rq.get_queue("default")
    ids = queue.finished_job_registry.get_job_ids()
    if len(ids) < before + 1:
        return None
    jobs = [job for job in Job.fetch_many(ids, connection=queue.connection) if job]
    last = max(jobs, key=lambda job: job.ended_at)
    return float((last.ended_at - last.started_at).total_seconds())


def finished_jobs() -> int:
    import django_rq

    return int(django_rq.get_queue("default").finished_job_registry.count)


def db_worker_time(run: int, before: int) -> float | None:
    """The worker time of the run's task (the newest enqueued), once it ended."""
    from django_tasks_db.models import DBTaskResult

    task = DBTaskResult.objects.latest("enqueued_at")
    if task.status != "SUCCESSFUL":
        return None
    return float((task.finished_at - task.started_at).total_seconds())


def measure(
    name: str,
    engine: LoopbackEngine,
    runs: int,
    worker_time: Callable[[int, int], float | None],
    count: Callable[[], int] = lambda: 0,
) -> dict[str, Any]:
    latencies, enqueues, workers = [], [], []
    for run in range(runs):
        before_posts, before = len(engine.posts), count()
        started = time.perf_counter()
        committed = flush(f"{name}-{run}")
        enqueues.append(time.perf_counter() - started)
        [*_, post] = engine.wait_for_posts(before_posts + 1, timeout=300)
        assert len(post.urls) == FLUSH, len(post.urls)
        latencies.append(post.received_at - committed)
        deadline = time.monotonic() + 300
        while (seconds := worker_time(run, before)) is None:  # it ends a moment after its POST
            if time.monotonic() > deadline:
                sys.exit(f"{name}: the worker did not finish run {run}")
            time.sleep(0.05)
        workers.append(seconds)
        assert len(engine.posts) == before_posts + 1, "sent twice"
    return {"latency": latencies, "enqueue": enqueues, "worker": workers}


def shown(values: list[float]) -> str:
    ms = [v * 1000 for v in values]
    return f"{statistics.median(ms):8.0f} ms  ({min(ms):.0f}-{max(ms):.0f})"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--interval", default="1", help="db_worker's polling interval (s)")
    parser.add_argument("--redis", default=None, help="a Redis database it may flush")
    args = parser.parse_args()

    workdir = Path(tempfile.mkdtemp(prefix="indexnow-bench-tasks-"))
    with redis_database(args.redis) as (_, redis_url), LoopbackEngine() as engine:
        base = dict(os.environ)
        base.update(
            DJANGO_SETTINGS_MODULE="tasks_settings",
            PYTHONPATH=os.pathsep.join([str(ROOT), str(ROOT / "benchmarks")]),
            BENCH_DB=str(workdir / "db.sqlite3"),
            BENCH_REDIS=redis_url,
            BENCH_ENGINE_URL=engine.url,
            PYTHONUNBUFFERED="1",
        )
        os.environ.update(env_for(base, "database", "queue"))
        for command in (["migrate", "-v0"], ["createcachetable", "-v0"]):
            subprocess.run([sys.executable, "-m", "django", *command], env=base, check=True)
        import django

        django.setup()
        from django.conf import settings

        from indexnow_django import conf

        results: dict[str, dict[str, Any]] = {}
        rq_env = env_for(base, "redis", "queue")
        with worker(["rqworker", "default", "--with-scheduler"], rq_env, workdir / "rq.log"):
            wait_for("Listening on", workdir / "rq.log")
            settings.INDEXNOW = {**settings.INDEXNOW, "DISPATCH": "queue"}
            conf.clear_cache()
            results["rq"] = measure("rq", engine, args.runs, rq_worker_time, finished_jobs)
        db_command = ["db_worker", "--interval", args.interval, "--no-startup-delay", "--no-reload"]
        for name, debounce in (
            ("tasks-db", "database"),
            ("tasks-db/locmem-cache", "locmem"),
            ("tasks-db/redis-cache", "redis"),
        ):
            log = workdir / f"{name.replace('/', '-')}.log"
            with worker(db_command, env_for(base, debounce, "tasks"), log):
                wait_for("Starting worker", log)
                settings.INDEXNOW = {**settings.INDEXNOW, "DISPATCH": "tasks"}
                conf.clear_cache()
                results[name] = measure(name, engine, args.runs, db_worker_time)

    import django as dj

    print(
        f"{FLUSH:,}-URL flush, {args.runs} runs each, median (lowest-highest); "
        f"Python {sys.version.split()[0]}, Django {dj.get_version()}, SQLite, "
        f"db_worker --interval {args.interval}"
    )
    print(f"{'':22} {'commit to POST':>28} {'flush (enqueue)':>28} {'worker time':>28}")
    for name, values in results.items():
        print(
            f"{name:22} {shown(values['latency']):>28} {shown(values['enqueue']):>28} "
            f"{shown(values['worker']):>28}"
        )


if __name__ == "__main__":
    main()
