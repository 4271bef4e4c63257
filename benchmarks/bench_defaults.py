"""Delivery at the shipped defaults: streams of single-URL flushes, before and now, in one run.

A web process (``python -m django shell``) flushes one URL at a time
(``dispatch()``, as a request that saved one object does) at a steady rate; one
rq worker (``manage.py rqworker --with-scheduler``, the package's worker class)
delivers them to a loopback engine answering at once. ``INDEXNOW`` sets only the
key, the base URL and the engine (``defaults_settings.py``). Each stream runs
twice: with ``QUEUE["COALESCE"]`` 0, the previous default (a job per flush,
throttled to 60 POSTs a minute), and with nothing overridden. For each it prints
the POSTs the engine received, the lag from each flush to the engine receiving
its URL (median, 95th percentile, worst), and the seconds from the stream's last
flush to the engine receiving the last URL.

Run from the repository root::

    .venv/bin/python benchmarks/bench_defaults.py            # 4/s for 30 s, 40/s for 20 s
    .venv/bin/python benchmarks/bench_defaults.py --stream 10x60

Today's code against another checkout, side by side in one run: each stream runs
at the shipped defaults on the other checkout, then on this one (the previous
design is left out)::

    git worktree add /tmp/base v1.0   # the release, or any commit
    .venv/bin/python benchmarks/bench_defaults.py --against /tmp/base

A run of the previous design waits at most ``--patience`` seconds for its backlog.
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
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_coalesce import FLUSHER, start_worker, stop_worker, wait_until_listening  # noqa: E402
from bench_submit import redis_database  # noqa: E402

from indexnow_django.testing import LoopbackEngine  # noqa: E402


def env(
    redis_url: str, engine: LoopbackEngine, database: Path, before: bool, code: Path = ROOT
) -> dict[str, str]:
    return {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "defaults_settings",
        "PYTHONPATH": os.pathsep.join([str(code / "benchmarks"), str(code)]),
        "BENCH_REDIS_URL": redis_url.rsplit("/", 1)[0],
        "BENCH_ENGINE_URL": engine.url,
        "BENCH_DB": str(database),
        "BENCH_BEFORE": "1" if before else "0",
        "PYTHONUNBUFFERED": "1",
    }


def run(
    redis_url: str,
    engine: LoopbackEngine,
    rate: float,
    seconds: float,
    before: bool,
    patience: float,
    workdir: Path,
    code: Path = ROOT,
    label: str = "",
) -> dict[str, Any]:
    import redis

    conn = redis.Redis.from_url(redis_url)
    conn.flushall()
    engine.reset()
    name = f"{'before' if before else 'now'}{label}-{rate:g}x{seconds:g}"
    database = workdir / f"{name}.sqlite3"
    variables = env(redis_url, engine, database, before, code)
    subprocess.run(
        [sys.executable, "-m", "django", "migrate", "-v", "0"], cwd=code, env=variables, check=True
    )
    worker = start_worker(variables, workdir / f"worker-{name}.log", cwd=code)
    wait_until_listening(conn)

    count = math.ceil(rate * seconds)
    log = workdir / f"flushes-{name}.jsonl"
    flusher = (
        FLUSHER.replace("FIRST", "0")
        .replace("COUNT", str(count))
        .replace("INTERVAL", repr(1 / rate))
        .replace("OUT", repr(str(log)))
    )
    subprocess.run(
        [sys.executable, "-m", "django", "shell", "-c", flusher],
        cwd=code,
        env=variables,
        stdout=subprocess.DEVNULL,
        check=True,
    )
    flushed = dict(json.loads(line) for line in log.read_text().splitlines())
    ended = max(flushed.values())
    received: dict[str, float] = {}
    deadline = time.monotonic() + patience
    while time.monotonic() < deadline:
        received = {url: post.received_at for post in engine.posts for url in post.urls}
        if len(received) >= len(flushed):
            break
        time.sleep(0.1)
    stop_worker(worker)
    lags = sorted(received[url] - at for url, at in flushed.items() if url in received)
    return {
        "design": "COALESCE 0 (before)" if before else f"shipped defaults{label}",
        "flushes": len(flushed),
        "delivered": len(received),
        "posts": len(engine.posts),
        "p50": statistics.median(lags) if lags else math.nan,
        "p95": lags[max(int(len(lags) * 0.95) - 1, 0)] if lags else math.nan,
        "max": lags[-1] if lags else math.nan,
        "tail": max(received.values()) - ended if received else math.nan,
    }


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--stream",
        action="append",
        help="RATExSECONDS (flushes a second, for how long); default 4x30 and 40x20",
    )
    parser.add_argument("--patience", type=float, default=150, help="seconds to wait for a backlog")
    parser.add_argument("--redis", help="a redis:// URL of a database to flush and use")
    parser.add_argument("--against", help="another checkout, run beside this one")
    args = parser.parse_args()
    streams = [tuple(map(float, s.split("x"))) for s in (args.stream or ["4x30", "40x20"])]
    signal.signal(signal.SIGTERM, lambda *_: sys.exit(1))

    workdir = Path(tempfile.mkdtemp(prefix="indexnow-bench-defaults-"))
    header = (
        f"{'stream':<12} {'design':<26} {'flushes':>7} {'delivered':>9} {'POSTs':>6} "
        f"{'p50':>7} {'p95':>7} {'max':>7} {'last URL after the end':>23}"
    )
    print("1 web process, 1 worker, 1 host, 1 engine answering at once; INDEXNOW at its defaults")
    print(header)
    with redis_database(args.redis) as (_, redis_url), LoopbackEngine() as engine:
        runs: list[tuple[bool, Path, str]] = [(True, ROOT, ""), (False, ROOT, "")]
        if args.against:
            runs = [(False, Path(args.against).resolve(), " (against)"), (False, ROOT, " (this)")]
        for rate, seconds in streams:
            for before, code, label in runs:
                r = run(
                    redis_url, engine, rate, seconds, before, args.patience, workdir, code, label
                )
                print(
                    f"{f'{rate:g}/s x {seconds:g} s':<12} {r['design']:<26} {r['flushes']:>7} "
                    f"{r['delivered']:>9} {r['posts']:>6} {r['p50']:>6.1f}s {r['p95']:>6.1f}s "
                    f"{r['max']:>6.1f}s {r['tail']:>22.1f}s",
                    flush=True,
                )


if __name__ == "__main__":
    main()
