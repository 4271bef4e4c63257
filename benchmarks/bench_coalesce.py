"""Benchmark coalesced delivery against a job per flush: a steady stream of single-URL flushes.

Several "web" processes (``python -m django shell``) each flush one URL at a
time (``dispatch()``, as a request that saved one object does) at a steady
rate, together ``--rate`` flushes a second for ``--seconds``; one rq worker
(``manage.py rqworker --with-scheduler``, the package's worker class) delivers
them to a loopback engine. It runs once with ``QUEUE["COALESCE"]`` 0 (a job per
flush) and once with ``--window`` seconds, each on a fresh Redis database,
then prints for each:

* POSTs the engine received, and the windows the run spanned;
* the worker's CPU time (the worker, its work horses and its scheduler, from
  the kernel's accounting when it exits) per URL delivered, less the CPU of
  the same worker idle for as long (Django's start, rq's polling);
* the peak of Redis's ``used_memory`` above its level before the run, and the
  Redis memory of delivery jobs (``MEMORY USAGE`` of every ``rq:job:*`` key,
  sampled every 0.2 s) per flush not yet delivered at that moment (the largest
  ratio over the samples with at least 10 flushes pending);
* the latency from each flush (its commit) to the engine receiving the URL,
  median and 95th percentile.

Run from the repository root (two cores: the default stream fits)::

    .venv/bin/python benchmarks/bench_coalesce.py
    .venv/bin/python benchmarks/bench_coalesce.py --rate 100 --seconds 60 --processes 2 --window 5

Nothing leaves the machine: Redis and the engine listen on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import signal
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_submit import redis_database  # noqa: E402

from indexnow_django.testing import LoopbackEngine  # noqa: E402

#: What each web process runs: ``count`` flushes of one URL, ``interval`` apart,
#: each URL and the time of its flush written to ``out``.
FLUSHER = """
import importlib, json, os, sys, time
import indexnow_django
# A checkout from before the units/ folder (--against) has dispatch at the root; its files
# tell, as an editable install of another checkout would answer for a module it lacks.
moved = os.path.exists(os.path.join(indexnow_django.__path__[0], "units", "dispatch.py"))
dispatch = importlib.import_module(
    "indexnow_django.units.dispatch" if moved else "indexnow_django.dispatch"
).dispatch
first, count, interval, out = FIRST, COUNT, INTERVAL, OUT
start = time.time()
with open(out, "w") as log:
    for n in range(count):
        due = start + n * interval
        pause = due - time.time()
        if pause > 0:
            time.sleep(pause)
        url = f"https://www.example.com/p/{first + n}/"
        log.write(json.dumps([url, time.time()]) + "\\n")
        dispatch([url])
"""


def env(redis_url: str, engine: LoopbackEngine, window: float) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "coalesce_settings",
        "PYTHONPATH": os.pathsep.join([str(ROOT / "benchmarks"), str(ROOT)]),
        "BENCH_REDIS_URL": redis_url.rsplit("/", 1)[0],
        "BENCH_ENGINE_URL": engine.url,
        "BENCH_COALESCE": str(window),
        "PYTHONUNBUFFERED": "1",
    }


def start_worker(variables: dict[str, str], log: Path, cwd: Path = ROOT) -> subprocess.Popen[bytes]:
    with log.open("ab") as out:
        worker = subprocess.Popen(
            [sys.executable, "-m", "django", "rqworker", "default", "--with-scheduler"],
            cwd=cwd,
            env=variables,
            stdout=out,
            stderr=subprocess.STDOUT,
        )
    return worker


def stop_worker(worker: subprocess.Popen[bytes]) -> float:
    """Stop the worker (rq's warm shutdown); its CPU seconds, its children's included."""
    worker.send_signal(signal.SIGTERM)
    _, status, usage = os.wait4(worker.pid, 0)
    worker.returncode = os.waitstatus_to_exitcode(status)
    return float(usage.ru_utime + usage.ru_stime)


def wait_until_listening(conn: Any, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not conn.smembers("rq:workers") or not conn.exists("rq:scheduler-lock:default"):
        if time.monotonic() > deadline:
            raise RuntimeError("the worker did not start")
        time.sleep(0.1)


def idle_cpu(redis_url: str, engine: LoopbackEngine, seconds: float, workdir: Path) -> float:
    """CPU seconds of a worker that starts, waits ``seconds`` with nothing to do, and stops."""
    import redis

    conn = redis.Redis.from_url(redis_url)
    conn.flushdb()
    worker = start_worker(env(redis_url, engine, 0), workdir / "idle-worker.log")
    wait_until_listening(conn)
    time.sleep(seconds)
    return stop_worker(worker)


def run(
    redis_url: str, engine: LoopbackEngine, window: float, args: argparse.Namespace, workdir: Path
) -> dict[str, Any]:
    import redis

    conn = redis.Redis.from_url(redis_url)
    conn.flushall()
    engine.reset()
    variables = env(redis_url, engine, window)
    worker = start_worker(variables, workdir / f"worker-{window:g}.log")
    wait_until_listening(conn)
    base_memory = int(conn.info("memory")["used_memory"])

    samples: list[tuple[float, int, int]] = []  # (time, used_memory, bytes of jobs)
    sampling = threading.Event()

    def sample() -> None:
        while not sampling.is_set():
            keys = list(conn.scan_iter("rq:job:*", count=1000))
            pipe = conn.pipeline(transaction=False)
            for key in keys:
                pipe.memory_usage(key)
            jobs = sum(size or 0 for size in pipe.execute()) if keys else 0
            samples.append((time.time(), int(conn.info("memory")["used_memory"]), jobs))
            sampling.wait(0.2)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()

    per_process = math.ceil(args.rate * args.seconds / args.processes)
    interval = args.processes / args.rate
    logs = [workdir / f"flushes-{window:g}-{n}.jsonl" for n in range(args.processes)]
    flushers = []
    for n, log in enumerate(logs):
        code = (
            FLUSHER.replace("FIRST", str(n * 10_000_000))
            .replace("COUNT", str(per_process))
            .replace("INTERVAL", repr(interval))
            .replace("OUT", repr(str(log)))
        )
        flushers.append(
            subprocess.Popen(
                [sys.executable, "-m", "django", "shell", "-c", code],
                cwd=ROOT,
                env=variables,
                stdout=subprocess.DEVNULL,
            )
        )
    for flusher in flushers:
        flusher.wait()
    flushed: dict[str, float] = {}
    for log in logs:
        for line in log.read_text().splitlines():
            url, at = json.loads(line)
            flushed[url] = at
    # A job per flush may lag far behind the stream: wait for it (a tenth of a second a flush).
    deadline = time.monotonic() + max(60.0, window * 4, len(flushed) * 0.1)
    received: dict[str, float] = {}
    while time.monotonic() < deadline:
        received = {url: post.received_at for post in engine.posts for url in post.urls}
        if len(received) >= len(flushed):
            break
        time.sleep(0.2)
    sampling.set()
    sampler.join()
    posts = len(engine.posts)
    cpu = stop_worker(worker)

    latencies = sorted(received[url] - at for url, at in flushed.items() if url in received)
    ratios = []
    for at, _, jobs in samples:
        pending = sum(1 for url, t in flushed.items() if t <= at < received.get(url, math.inf))
        if pending >= 10:
            ratios.append(jobs / pending)
    first, last = min(flushed.values()), max(flushed.values())
    return {
        "window": window,
        "flushes": len(flushed),
        "delivered": len(received),
        "posts": posts,
        "windows": math.floor(last / window) - math.floor(first / window) + 1 if window else None,
        "cpu": cpu,
        "peak_memory": max(used for _, used, _ in samples) - base_memory,
        "job_bytes_per_pending_flush": max(ratios) if ratios else 0.0,
        "p50": statistics.median(latencies),
        "p95": latencies[int(len(latencies) * 0.95) - 1],
        "elapsed": last - first,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--rate", type=float, default=100, help="flushes a second, in all")
    parser.add_argument("--seconds", type=float, default=60, help="length of the stream")
    parser.add_argument("--processes", type=int, default=2, help="web processes flushing")
    parser.add_argument("--window", type=float, default=5, help="QUEUE['COALESCE'] of the run")
    parser.add_argument("--redis", help="a redis:// URL of a database to flush and use")
    args = parser.parse_args()
    # Stopped from outside: leave through the context managers (Redis, engine) all the same.
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))

    workdir = Path(tempfile.mkdtemp(prefix="indexnow-bench-coalesce-"))
    with redis_database(args.redis) as (_, redis_url), LoopbackEngine() as engine:
        results = [run(redis_url, engine, window, args, workdir) for window in (0, args.window)]
        idle = idle_cpu(redis_url, engine, args.seconds + 5, workdir)

    print(
        f"{args.rate:g} single-URL flushes a second for {args.seconds:g} s from "
        f"{args.processes} processes, 1 worker, 1 host, 1 engine "
        f"(idle worker over as long: {idle:.2f} s CPU)"
    )
    header = (
        f"{'design':<20} {'flushes':>8} {'delivered':>9} {'POSTs':>6} {'windows':>8} "
        f"{'CPU/URL':>9} {'peak Redis':>11} {'jobs/pending':>13} {'p50':>6} {'p95':>6}"
    )
    print(header)
    for result in results:
        design = f"COALESCE {result['window']:g} s" if result["window"] else "COALESCE 0 (today)"
        busy = max(result["cpu"] - idle, 0.0)
        result["cpu_per_url"] = busy / max(result["delivered"], 1)
        print(
            f"{design:<20} {result['flushes']:>8} {result['delivered']:>9} {result['posts']:>6} "
            f"{result['windows'] or '-':>8} {result['cpu_per_url'] * 1000:>7.2f}ms "
            f"{result['peak_memory'] / 1024:>8.0f} KB "
            f"{result['job_bytes_per_pending_flush']:>10.0f} B "
            f"{result['p50']:>5.2f}s {result['p95']:>5.2f}s"
        )
    today, coalesced = results
    ratio = today["cpu_per_url"] / max(coalesced["cpu_per_url"], 1e-9)
    print(
        f"worker CPU per URL: {ratio:.0f}x less coalesced; "
        f"POSTs per window: {coalesced['posts'] / max(coalesced['windows'], 1):.2f}"
    )


if __name__ == "__main__":
    main()
