"""Benchmark bulk delivery: ``manage.py indexnow_submit --file PATH --sync`` against a floor.

Writes N URLs of one host (default 1,000,000) to a file, starts a loopback
engine on 127.0.0.1 that answers 200 at once and a redis-server of its own (or
uses ``--redis``), and measures side by side, each in its own child process,
the wall time and the peak resident memory (the child's own ``VmHWM``, sampled
while it runs) of:

* ``floor``: the file read line by line and posted in batches of 10,000 with
  ``requests`` (no normalization, no validation, no debounce);
* ``debounce off``: the command with ``DEBOUNCE["TTL"] = 0``;
* ``debounce on``: the command with the debounce store on Redis (Django's
  ``RedisCache``), TTL 600, its database flushed first; then the Redis memory
  the store holds per URL (``used_memory`` after less before);
* ``cache API`` (with ``--cache-api``): the command with the store on a
  ``LocMemCache``, through Django's cache API as for any non-Redis cache;
* ``worker flush``: what a worker's job does with 10,000 new URLs (debounce
  on Redis and one POST), timed inside the process, best and median of 5.

and prints each command's ratio to the floor next to the targets. Run from
the repository root::

    .venv/bin/python benchmarks/bench_submit.py                 # 1,000,000 URLs
    .venv/bin/python benchmarks/bench_submit.py --urls 200000
    .venv/bin/python benchmarks/bench_submit.py --redis redis://127.0.0.1:6379/9

Today's code against another checkout, side by side in one run: the command rows
run on each checkout in turn (``--rounds`` times, alternating; each row's best
wall time and its peak memory are kept), against the same floor::

    git worktree add /tmp/base v1.0   # the release, or any commit
    .venv/bin/python benchmarks/bench_submit.py --against /tmp/base --rounds 3

``--redis`` names a database the benchmark may flush. Nothing leaves the
machine: the engine listens on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from indexnow_django.testing import LoopbackEngine  # noqa: E402

BATCH = 10_000
HOST = "www.example.com"

# Targets: wall ratio to the floor, peak RSS (MiB), Redis bytes per URL, worker flush (s).
TARGET_ON, TARGET_OFF, TARGET_RSS, TARGET_BYTES, TARGET_FLUSH = 3.0, 2.0, 100, 32, 0.2


def plain_loop(path: str, endpoint: str) -> None:
    """The floor, run in a child process: read, batch, POST. Nothing more."""
    import requests

    session = requests.Session()

    def post(urls: list[str]) -> None:
        body = {"host": HOST, "key": "bench-key-0123456789", "urlList": urls}
        response = session.post(
            endpoint,
            data=json.dumps(body),
            timeout=30,
            headers={"Content-Type": "application/json; charset=utf-8"},
        )
        response.raise_for_status()

    batch: list[str] = []
    with open(path, encoding="utf-8") as handle:
        for line in handle:
            line = line.strip()
            if not line or line.startswith("#"):
                continue
            batch.append(line)
            if len(batch) == BATCH:
                post(batch)
                batch = []
    if batch:
        post(batch)


def worker_flush(rounds: int) -> None:
    """In a child process with Django set up: time the job function on 10,000 new URLs."""
    import django

    django.setup()
    from indexnow_django.jobs import deliver

    timings = []
    for round_ in range(rounds):
        urls = [f"https://{HOST}/flush/{round_}/{n}/" for n in range(BATCH)]
        started = time.perf_counter()
        result = deliver(urls)
        timings.append(time.perf_counter() - started)
        assert result["accepted"] == BATCH, result
    print(json.dumps(timings))


def measure(command: list[str], env: dict[str, str], cwd: Path = ROOT) -> tuple[float, int, str]:
    """Run ``command``; return (wall seconds, peak RSS in MiB, its output). Exits on failure."""
    started = time.monotonic()
    proc = subprocess.Popen(
        command, env=env, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    # The child's own high-water mark (VmHWM), sampled until it exits: wait4's
    # ru_maxrss would also count the pages of this process it was forked from.
    peak = 0
    done = threading.Event()

    def watch() -> None:
        nonlocal peak
        status_file = Path(f"/proc/{proc.pid}/status")
        while not done.is_set():
            try:
                text = status_file.read_text()
            except OSError:
                return
            for line in text.splitlines():
                if line.startswith("VmHWM:"):
                    peak = max(peak, int(line.split()[1]))
            done.wait(0.005)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.monotonic() - started
    done.set()
    watcher.join()
    out = proc.stdout.read().decode() if proc.stdout else ""
    err = proc.stderr.read().decode() if proc.stderr else ""
    proc.returncode = os.waitstatus_to_exitcode(status)
    if proc.returncode != 0:
        sys.exit(f"{' '.join(command)} exited {proc.returncode}:\n{out}\n{err}")
    return elapsed, (peak or usage.ru_maxrss) // 1024, out


@contextlib.contextmanager
def redis_database(url: str | None) -> Iterator[tuple[Any, str]]:
    """A Redis connection and its URL: a redis-server of its own (stopped at the end), or the
    database ``url`` names (flushed at the end). Waits until it answers."""
    import redis

    server = None
    if url is None:
        binary = shutil.which("redis-server")
        if binary is None:
            sys.exit("redis-server not found: install it, or pass --redis redis://host:port/db")
        with socket.socket() as sock:
            sock.bind(("127.0.0.1", 0))
            port = sock.getsockname()[1]
        workdir = tempfile.mkdtemp(prefix="indexnow-bench-redis-")
        server = subprocess.Popen(
            [binary, "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--dir", workdir],
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        url = f"redis://127.0.0.1:{port}/0"
    conn = redis.Redis.from_url(url)
    for _ in range(100):
        try:
            conn.ping()
            break
        except redis.ConnectionError:
            time.sleep(0.05)
    try:
        yield conn, url
    finally:
        if server is not None:
            server.terminate()
            server.wait(5)
            shutil.rmtree(workdir, ignore_errors=True)
        else:
            conn.flushdb()


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--urls", type=int, default=1_000_000, help="how many URLs")
    parser.add_argument("--redis", help="a redis:// URL of a database to flush and use")
    parser.add_argument(
        "--cache-api",
        action="store_true",
        help="also run the command with the store on a LocMemCache (Django's cache API)",
    )
    parser.add_argument(
        "--against", help="another checkout whose command rows run beside this one's"
    )
    parser.add_argument(
        "--rounds", type=int, default=1, help="runs of each row, alternating (best kept)"
    )
    parser.add_argument("--plain-loop", nargs=2, help=argparse.SUPPRESS)
    parser.add_argument("--worker-flush", type=int, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.plain_loop:
        plain_loop(*args.plain_loop)
        return
    if args.worker_flush:
        worker_flush(args.worker_flush)
        return

    stack = contextlib.ExitStack()
    conn, redis_url = stack.enter_context(redis_database(args.redis))

    workdir = Path(tempfile.mkdtemp(prefix="indexnow-bench-"))
    path = workdir / "urls.txt"
    with path.open("w", encoding="utf-8") as handle:
        for n in range(args.urls):
            handle.write(f"https://{HOST}/articles/{n}/some-title-{n % 997}/\n")
    size = path.stat().st_size / 2**20
    submit = [sys.executable, "-m", "django", "indexnow_submit", "--file", str(path), "--sync"]
    codes = {"this": ROOT}
    if args.against:
        codes = {"against": Path(args.against).resolve(), "this": ROOT}
    try:
        with LoopbackEngine() as engine:

            def code_env(code: Path, debounce: str) -> dict[str, str]:
                return {
                    **os.environ,
                    "PYTHONPATH": os.pathsep.join([str(code / "benchmarks"), str(code)]),
                    "DJANGO_SETTINGS_MODULE": "submit_settings",
                    "BENCH_ENGINE_URL": engine.url,
                    "BENCH_DEBOUNCE": debounce,
                }

            print(f"{args.urls:,} URLs of one host ({size:.0f} MiB), batches of {BATCH:,}")
            print(
                f"{'run':<22} {'wall s':>7} {'ratio':>6} {'peak RSS MiB':>13} {'URLs received':>14}"
            )
            rows: list[tuple[str, list[str], dict[str, str], Path]] = [
                (
                    "floor",
                    [sys.executable, __file__, "--plain-loop", str(path), engine.url],
                    code_env(ROOT, "off"),
                    ROOT,
                )
            ]
            for label, code in codes.items():
                suffix = f" ({label})" if args.against else ""
                rows.append((f"debounce off{suffix}", submit, code_env(code, "off"), code))
                rows.append((f"debounce on{suffix}", submit, code_env(code, redis_url), code))
                if args.cache_api:
                    rows.append((f"cache API{suffix}", submit, code_env(code, "locmem"), code))
            results: dict[str, tuple[float, int]] = {}
            per_url: dict[str, float] = {}
            for _ in range(args.rounds):
                for name, command, env, code in rows:
                    engine.reset()
                    if name.startswith("debounce on"):
                        conn.flushdb()
                        before = conn.info("memory")["used_memory"]
                    elapsed, rss, _ = measure(command, env, code)
                    if name.startswith("debounce on"):
                        used = conn.info("memory")["used_memory"] - before
                        per_url[name] = used / args.urls
                    received = sum(len(post.urls) for post in engine.posts)
                    engine.requests.clear()
                    best, peak = results.get(name, (elapsed, rss))
                    results[name] = (min(best, elapsed), max(peak, rss))
                    floor = results["floor"][0]
                    print(
                        f"{name:<22} {elapsed:>7.2f} {elapsed / floor:>5.2f}x {rss:>13} "
                        f"{received:>14,}",
                        flush=True,
                    )
            floor = results["floor"][0]
            if args.rounds > 1:
                print(f"\nbest of {args.rounds} (peak RSS: the highest)")
                for name, (elapsed, rss) in results.items():
                    print(f"{name:<22} {elapsed:>7.2f} {elapsed / floor:>5.2f}x {rss:>13}")
            conn.flushdb()
            _, _, out = measure(
                [sys.executable, __file__, "--worker-flush", "5"], code_env(ROOT, redis_url)
            )
            flushes = json.loads(out.strip().splitlines()[-1])
    finally:
        path.unlink()
        workdir.rmdir()
        stack.close()

    if args.against:
        print("\nagainst -> this (best wall ratio to the floor; peak RSS):")
        for kind in ("debounce off", "debounce on"):
            then, now = results[f"{kind} (against)"], results[f"{kind} (this)"]
            print(
                f"  {kind:<13} {then[0] / floor:.2f}x -> {now[0] / floor:.2f}x; "
                f"{then[1]} -> {now[1]} MiB"
            )
        results["debounce on"] = results["debounce on (this)"]
        results["debounce off"] = results["debounce off (this)"]
        per_url["debounce on"] = per_url["debounce on (this)"]
    on, off = results["debounce on"], results["debounce off"]
    best, median = min(flushes), statistics.median(flushes)
    rss = max(on[1], off[1])
    checks = [
        ("wall, debounce on / floor", f"{on[0] / floor:.2f}x", f"{TARGET_ON:g}x", on[0] / floor),
        (
            "wall, debounce off / floor",
            f"{off[0] / floor:.2f}x",
            f"{TARGET_OFF:g}x",
            off[0] / floor,
        ),
        ("peak RSS of the command", f"{rss} MiB", f"{TARGET_RSS} MiB", rss / TARGET_RSS),
        (
            "Redis per debounced URL",
            f"{per_url['debounce on']:.1f} bytes",
            f"{TARGET_BYTES} bytes",
            per_url["debounce on"],
        ),
        ("worker flush of 10,000", f"{best:.3f} s (median {median:.3f})", f"{TARGET_FLUSH:g} s", 0),
    ]
    limits = [TARGET_ON, TARGET_OFF, 1, TARGET_BYTES, 0]
    print()
    for (what, value, target, measured), limit in zip(checks, limits, strict=True):
        ok = best <= TARGET_FLUSH if limit == 0 else measured <= limit
        print(f"{what:<28} {value:<26} target <= {target:<10} {'ok' if ok else 'MISSED'}")


if __name__ == "__main__":
    main()
