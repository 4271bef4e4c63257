"""Benchmark ``manage.py indexnow_submit --file PATH --sync`` on a large URL file.

Writes N URLs (default 1,000,000) to a file, starts a loopback engine on
127.0.0.1 and measures, each in its own child process, the wall time and the
peak resident memory (``ru_maxrss`` from ``wait4``) of:

* ``command``: ``python -m django indexnow_submit --file urls.txt --sync``;
* ``plain loop``: the same file read line by line and posted in batches of
  10,000 with ``requests`` (no normalization, no validation, no debounce),
  the floor any bulk submitter is measured against.

Run from the repository root::

    .venv/bin/python benchmarks/bench_submit.py                     # 1,000,000 URLs, no debounce
    .venv/bin/python benchmarks/bench_submit.py --debounce locmem   # debounce in LocMemCache
    .venv/bin/python benchmarks/bench_submit.py --debounce redis://127.0.0.1:6379/9

Nothing leaves the machine: the engine listens on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from indexnow_django.testing import LoopbackEngine  # noqa: E402

BATCH = 10_000


def plain_loop(path: str, endpoint: str) -> None:
    """The baseline, run in a child process: read, batch, POST. Nothing more."""
    import requests

    session = requests.Session()

    def post(urls: list[str]) -> None:
        body = {"host": "www.example.com", "key": "bench-key-0123456789", "urlList": urls}
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


def measure(command: list[str], env: dict[str, str]) -> tuple[float, int, int, str]:
    """Run ``command``; return (wall seconds, peak RSS in MiB, exit code, last output line)."""
    started = time.monotonic()
    proc = subprocess.Popen(
        command, env=env, cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    # wait4 gives the resource usage of this child alone.
    _, status, usage = os.wait4(proc.pid, 0)
    elapsed = time.monotonic() - started
    out = proc.stdout.read().decode() if proc.stdout else ""
    err = proc.stderr.read().decode() if proc.stderr else ""
    code = os.waitstatus_to_exitcode(status)
    proc.returncode = code
    if code != 0:
        print(out, err, file=sys.stderr)
    lines = out.strip().splitlines()
    return elapsed, usage.ru_maxrss // 1024, code, lines[-1] if lines else ""


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument(
        "--urls", type=int, default=1_000_000, help="how many URLs (default 1,000,000)"
    )
    parser.add_argument(
        "--debounce", default="off", help="off (default), locmem, or a redis:// URL"
    )
    parser.add_argument(
        "--plain-loop", nargs=2, metavar=("PATH", "ENDPOINT"), help=argparse.SUPPRESS
    )
    args = parser.parse_args()
    if args.plain_loop:
        plain_loop(*args.plain_loop)
        return

    workdir = Path(tempfile.mkdtemp(prefix="indexnow-bench-"))
    path = workdir / "urls.txt"
    with path.open("w", encoding="utf-8") as handle:
        for n in range(args.urls):
            handle.write(f"https://www.example.com/articles/{n}/some-title-{n % 997}/\n")
    size = path.stat().st_size / 2**20

    with LoopbackEngine() as engine:
        env = {
            **os.environ,
            "PYTHONPATH": os.pathsep.join([str(ROOT / "benchmarks"), str(ROOT)]),
            "DJANGO_SETTINGS_MODULE": "submit_settings",
            "BENCH_ENGINE_URL": engine.url,
            "BENCH_DEBOUNCE": args.debounce,
        }
        runs = {
            "command": [
                sys.executable,
                "-m",
                "django",
                "indexnow_submit",
                "--file",
                str(path),
                "--sync",
                "--verbosity",
                "1",
            ],
            "plain loop": [sys.executable, __file__, "--plain-loop", str(path), engine.url],
        }
        print(
            f"{args.urls:,} URLs ({size:.0f} MiB), batches of {BATCH:,}, debounce: {args.debounce}"
        )
        print(f"{'run':<12} {'wall s':>8} {'peak RSS MiB':>13} {'POSTs':>6} {'URLs received':>14}")
        for name, command in runs.items():
            engine.reset()
            elapsed, rss, code, last = measure(command, env)
            posts = engine.posts
            received = sum(len(p.urls) for p in posts)
            print(
                f"{name:<12} {elapsed:>8.1f} {rss:>13} {len(posts):>6} {received:>14,}"
                + ("" if code == 0 else f"  (exit {code})")
            )
            if name == "command":
                print(f"{'':<12} {last}")
            engine.requests.clear()
    path.unlink()
    workdir.rmdir()


if __name__ == "__main__":
    main()
