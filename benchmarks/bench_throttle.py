"""Measure the throttle: the rate an engine sees from 3 rq workers and from a bulk command.

Starts what the test suite starts (a redis-server, a loopback engine on
127.0.0.1, a SQLite file: ``tests/services.py``), then, with
``THROTTLE = {"MAX_REQUESTS_PER_MINUTE": 10}`` (``--budget``), the debounce cache
on that Redis and one URL per POST (``BATCH["MAX_URLS"] = 1``):

* ``queue``: ``manage.py indexnow_submit --file urls.txt`` queues one job per
  URL (``--urls``, default 25) and 3 real ``rqworker --with-scheduler``
  processes deliver them; the jobs over budget defer themselves;
* ``sync``: ``manage.py indexnow_submit --file urls.txt --sync`` (``--sync-urls``,
  default 8) sends from its own process and waits between POSTs.

For each it prints how many POSTs the engine received, over how long, the mean
rate (POSTs per minute between the first and the last), the most POSTs in any
60 seconds, and the shortest gap between two. Run from the repository root::

    PYTHONPATH=. python benchmarks/bench_throttle.py
    PYTHONPATH=. python benchmarks/bench_throttle.py --budget 30 --urls 60

It takes about ``urls / budget`` minutes for each part. Nothing leaves the machine.
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from tests import services  # noqa: E402


def figures(times: list[float], budget: int) -> dict[str, Any]:
    times = sorted(times)
    span = times[-1] - times[0] if len(times) > 1 else 0.0
    most = max(sum(1 for t in times[i:] if t < start + 60) for i, start in enumerate(times))
    gaps = [later - earlier for earlier, later in itertools.pairwise(times)]
    return {
        "posts": len(times),
        "span_s": round(span, 1),
        "rate_per_min": round((len(times) - 1) / span * 60, 2) if span else None,
        "most_in_any_60s": most,
        "min_gap_s": round(min(gaps), 2) if gaps else None,
        "budget_per_min": budget,
    }


def command(args: list[str], env: dict[str, str]) -> tuple[float, str]:
    started = time.monotonic()
    done = subprocess.run(
        [sys.executable, "-m", "django", "indexnow_submit", *args],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    if done.returncode != 0:
        raise SystemExit(f"indexnow_submit failed:\n{done.stdout}\n{done.stderr}")
    return time.monotonic() - started, done.stdout


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--budget", type=int, default=10, help="MAX_REQUESTS_PER_MINUTE")
    parser.add_argument("--urls", type=int, default=25, help="URLs (POSTs) for the workers")
    parser.add_argument("--sync-urls", type=int, default=8, help="URLs (POSTs) for --sync")
    parser.add_argument("--workers", type=int, default=3)
    args = parser.parse_args()

    services.start()
    import redis
    from rq.worker import Worker as RQWorker

    from tests.workers import WorkerProcess

    engine = services.engine()
    conn = redis.Redis.from_url(f"{services.ensure_redis()}/0")
    conn.flushdb()
    redis.Redis.from_url(f"{services.ensure_redis()}/1").flushdb()
    overrides = {
        "DISPATCH": "queue",
        "DEBOUNCE": {"CACHE": "shared", "TTL": 600},
        "THROTTLE": {"MAX_REQUESTS_PER_MINUTE": args.budget},
        "BATCH": {"MAX_URLS": 1},
    }
    env = dict(os.environ)
    env.update(
        DJANGO_SETTINGS_MODULE="tests.settings",
        INDEXNOW_TEST_OVERRIDES=json.dumps(overrides),
        PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")])),
    )
    results: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        urls = Path(tmp) / "urls.txt"
        urls.write_text("".join(f"/queued/{n}/\n" for n in range(args.urls)))
        workers = [
            WorkerProcess(overrides=overrides, log_dir=Path(tmp), name=f"bench-throttle-{n}")
            for n in range(args.workers)
        ]
        try:
            for worker in workers:
                worker.start()
            for worker in workers:
                worker.wait_until_ready(conn)
            print(f"{len(RQWorker.all(connection=conn))} workers ready", flush=True)
            engine.reset()
            took, _ = command(["--file", str(urls)], env)
            print(f"queued {args.urls} jobs in {took:.1f}s; waiting for the POSTs", flush=True)
            engine.wait_for_posts(args.urls, timeout=args.urls * 60 / args.budget * 2 + 60)
            results["queue"] = figures([p.received_at for p in engine.posts], args.budget)
            results["queue"]["deferrals_logged"] = sum(
                w.output().count("IndexNow throttled batch=") for w in workers
            )
        finally:
            for worker in workers:
                worker.stop()

        engine.reset()
        urls.write_text("".join(f"/sync/{n}/\n" for n in range(args.sync_urls)))
        took, stdout = command(["--file", str(urls), "--sync"], env)
        results["sync"] = figures([p.received_at for p in engine.posts], args.budget)
        results["sync"]["command_s"] = round(took, 1)
        results["sync"]["waiting_lines"] = stdout.count("Waiting ")
    services.stop()
    print(json.dumps(results, indent=2))


if __name__ == "__main__":
    main()
