"""Benchmark the history of POSTs: what recording costs, and what a million URLs take.

``record``: in one process, against a fresh database, posts batches of 10,000
URLs to a loopback engine and records each POST as the submitter does, until a
million URLs are stored; prints the time of a POST and of its record (the
INSERT), the space the table takes, and the time of a search by part of a URL
(the admin's search) and of the "last accepted" look-up of the admin mixin.

``submit``: ``manage.py indexnow_submit --file urls.txt --sync`` on a million
URLs, with the history on and off, side by side (child processes, alternated).

Run from the repository root::

    .venv/bin/python benchmarks/bench_history.py record --db /tmp/history.sqlite3
    .venv/bin/python benchmarks/bench_history.py record --db postgres://127.0.0.1:5432/indexnow_bench
    .venv/bin/python benchmarks/bench_history.py submit --db /tmp/history.sqlite3

The PostgreSQL database is dropped and created again (user ``postgres``).
Nothing leaves the machine: the engine listens on 127.0.0.1.
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from urllib.parse import urlsplit

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

BATCH = 10_000


WORDS = [
    "indexnow",
    "django",
    "search",
    "engine",
    "pages",
    "release",
    "notes",
    "guide",
    "news",
    "update",
    "summer",
]


def url(i: int) -> str:
    """A URL of a typical length (about 70 characters), not all alike."""
    slug = "-".join(WORDS[(i * k + k) % len(WORDS)] for k in (7, 3, 5))
    return (
        f"https://www.example.com/blog/{2020 + i % 7}/{1 + i % 12:02d}/{slug}-{i * 7919 % 999983}/"
    )


def fresh_database(db: str) -> None:
    if db.startswith("postgres://"):
        import psycopg

        parts = urlsplit(db)
        name = parts.path.lstrip("/")
        with psycopg.connect(
            host=parts.hostname,
            port=parts.port or 5432,
            user="postgres",
            dbname="postgres",
            autocommit=True,
        ) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}"')
            conn.execute(f'CREATE DATABASE "{name}"')
    else:
        Path(db).unlink(missing_ok=True)


def setup(db: str, engine_url: str, history: str = "on") -> None:
    os.environ.update(
        DJANGO_SETTINGS_MODULE="history_settings",
        BENCH_DB=db,
        BENCH_ENGINE_URL=engine_url,
        BENCH_HISTORY=history,
    )
    import django
    from django.core.management import call_command

    django.setup()
    call_command("migrate", verbosity=0)


def table_size(db: str) -> str:
    from django.db import connection

    with connection.cursor() as cursor:
        if db.startswith("postgres://"):
            cursor.execute(
                "SELECT pg_total_relation_size('indexnow_delivery'), "
                "pg_relation_size('indexnow_delivery'), pg_indexes_size('indexnow_delivery')"
            )
            total, heap, indexes = cursor.fetchone()
            return (
                f"{total / 1e6:.1f} MB (table {heap / 1e6:.1f} MB, long values in TOAST "
                f"{(total - heap - indexes) / 1e6:.1f} MB, indexes {indexes / 1e6:.1f} MB)"
            )
        cursor.execute("PRAGMA page_count")
        pages = cursor.fetchone()[0]
        cursor.execute("PRAGMA page_size")
        size = cursor.fetchone()[0]
        whole = Path(db).stat().st_size
        return f"{pages * size / 1e6:.1f} MB (whole SQLite file: {whole / 1e6:.1f} MB)"


def best_of(runs: int, work) -> float:
    times = []
    for _ in range(runs):
        started = time.perf_counter()
        work()
        times.append(time.perf_counter() - started)
    return min(times)


def record(args: argparse.Namespace) -> None:
    from indexnow_django.testing import LoopbackEngine

    engine = LoopbackEngine().start()
    fresh_database(args.db)
    setup(args.db, engine.url)
    from django.db import connection
    from django.db.models import Q

    from indexnow_django.conf import get_settings
    from indexnow_django.models import Delivery
    from indexnow_django.sending import history
    from indexnow_django.sending.send import make_client

    conf = get_settings()
    client = make_client(conf)
    engine_ = conf.engines[0]
    posts: list[float] = []
    inserts: list[float] = []
    batches = args.urls // BATCH
    for n in range(batches):
        urls = [url(i) for i in range(n * BATCH, (n + 1) * BATCH)]
        started = time.perf_counter()
        result = client.post(engine_, "www.example.com", conf.key, urls)
        posts.append(time.perf_counter() - started)
        started = time.perf_counter()
        history.record(result, batch_id=f"bench{n:04d}", conf=conf)
        inserts.append(time.perf_counter() - started)
        engine.reset()
    stored = sum(Delivery.objects.values_list("url_count", flat=True))
    assert stored == batches * BATCH, stored
    print(f"database: {connection.vendor} {args.db}")
    print(f"{batches} POSTs of {BATCH:,} URLs to the loopback engine, each recorded")
    print(
        f"  POST:   median {statistics.median(posts) * 1000:.1f} ms, max {max(posts) * 1000:.1f} ms"
    )
    print(
        f"  record: median {statistics.median(inserts) * 1000:.1f} ms, "
        f"p90 {statistics.quantiles(inserts, n=10)[-1] * 1000:.1f} ms, "
        f"max {max(inserts) * 1000:.1f} ms "
        f"({statistics.median(inserts) / statistics.median(posts):.0%} of a POST)"
    )
    print(f"space for {stored:,} URLs: {table_size(args.db)}")
    middle = url(stored // 2)
    part = middle.split("/")[-2]
    search = lambda term: Delivery.objects.filter(  # noqa: E731
        Q(batch_id=term) | Q(urls__contains=term)
    ).count()
    print(f"search by part of a URL ({part!r}): {best_of(3, lambda: search(part)) * 1000:.0f} ms")
    print(
        f"last accepted of one URL: "
        f"{best_of(3, lambda: history.last_accepted([middle])) * 1000:.0f} ms"
    )
    engine.stop()


def submit(args: argparse.Namespace) -> None:
    from indexnow_django.testing import LoopbackEngine

    engine = LoopbackEngine().start()
    workdir = Path(tempfile.mkdtemp(prefix="indexnow-bench-history-"))
    path = workdir / "urls.txt"
    with path.open("w", encoding="utf-8") as handle:
        for i in range(args.urls):
            handle.write(url(i) + "\n")
    fresh_database(args.db)
    env = {
        **os.environ,
        "DJANGO_SETTINGS_MODULE": "history_settings",
        "BENCH_DB": args.db,
        "BENCH_ENGINE_URL": engine.url,
        "PYTHONPATH": os.pathsep.join([str(ROOT), str(ROOT / "benchmarks")]),
    }
    command = [sys.executable, "-m", "django"]
    subprocess.run([*command, "migrate", "--verbosity", "0"], env=env, check=True)
    times: dict[str, list[float]] = {"off": [], "on": []}
    for _ in range(args.rounds):
        for state in ("off", "on"):
            engine.reset()
            started = time.perf_counter()
            subprocess.run(
                [*command, "indexnow_submit", "--file", str(path), "--sync", "--verbosity", "0"],
                env={**env, "BENCH_HISTORY": state},
                check=True,
            )
            times[state].append(time.perf_counter() - started)
            assert len(engine.posted_urls()) == args.urls
    off, on = min(times["off"]), min(times["on"])
    print(f"indexnow_submit --file ({args.urls:,} URLs) --sync, best of {args.rounds}:")
    print(f"  history off: {off:.2f} s   all runs: {', '.join(f'{t:.2f}' for t in times['off'])}")
    print(f"  history on:  {on:.2f} s   all runs: {', '.join(f'{t:.2f}' for t in times['on'])}")
    print(f"  recording adds {on - off:+.2f} s ({(on - off) / off:+.1%})")
    engine.stop()


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["record", "submit"])
    parser.add_argument("--db", required=True, help="a SQLite file, or postgres://HOST:PORT/NAME")
    parser.add_argument("--urls", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=2, help="submit: runs of each kind")
    args = parser.parse_args()
    if args.what == "record":
        record(args)
    else:
        submit(args)


if __name__ == "__main__":
    main()
