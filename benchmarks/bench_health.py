"""Benchmark what monitoring reads from a history of a million records: the health per host and
engine (``indexnow_check``'s section, the admin's notice) and the freshness report.

Fills a fresh database with ``--records`` ``Delivery`` records (default a million) the way
``bench_history.py`` makes its URLs, spread over 14 days: 10 hosts, 2 engines, mostly
accepted, some retried and rejected, one to three URLs each, every record with its flush
time; the last records of one host and engine are a run of 429s. Then prints, best of
``--runs``, the time of :func:`indexnow_django.ops.health.host_engine_health` for the 10
hosts and 2 engines, and of :func:`indexnow_django.ops.report.freshness` over 1 and 7 days,
and the database's plan of each health query.

Run from the repository root::

    .venv/bin/python benchmarks/bench_health.py --db /tmp/health.sqlite3
    .venv/bin/python benchmarks/bench_health.py --db postgres://127.0.0.1:5432/indexnow_bench

The PostgreSQL database is dropped and created again (user ``postgres``). Nothing is sent.
"""

from __future__ import annotations

import argparse
import sys
import time
from datetime import timedelta
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_history import best_of, fresh_database, setup, url  # noqa: E402

HOSTS = [f"site{n}.example.com" for n in range(9)] + ["www.example.com"]
ENGINES = ["indexnow", "bing"]
CHUNK = 20_000


def fill(records: int) -> None:
    from django.db import connection
    from django.utils import timezone

    from indexnow_django.models import Delivery

    now = timezone.now()
    span = timedelta(days=14).total_seconds()
    start = time.perf_counter()
    made = 0
    while made < records:
        rows = []
        for i in range(made, min(made + CHUNK, records)):
            sent = now - timedelta(seconds=span * (1 - i / records) + 60)
            kind = i % 50
            outcome, status = "accepted", 200
            if kind in (7, 19, 31, 43):
                outcome, status = "retry", 429
            elif kind == 11:
                outcome, status = "rejected", 422
            urls = [url(i * 3 + k) for k in range(1 + i % 3)]
            rows.append(
                Delivery(
                    sent_at=sent,
                    flushed_at=sent - timedelta(seconds=1 + i % 90),
                    batch_id=f"{i // 2:016x}",
                    attempt=1,
                    engine=ENGINES[i % 2],
                    host=HOSTS[(i // 2) % len(HOSTS)],
                    url_count=len(urls),
                    outcome=outcome,
                    status=status,
                    answer="" if outcome == "accepted" else f"answered {status}",
                    duration=0.05,
                    urls="\n".join(urls),
                )
            )
        Delivery.objects.bulk_create(rows, batch_size=2000)
        made += len(rows)
    # The current trouble: the last 12 POSTs of www.example.com to bing were 429s.
    Delivery.objects.bulk_create(
        Delivery(
            sent_at=now - timedelta(seconds=50 - n),
            flushed_at=now - timedelta(seconds=55 - n),
            batch_id=f"run{n}",
            engine="bing",
            host="www.example.com",
            url_count=1,
            outcome="retry",
            status=429,
            answer="answered 429",
            urls=url(n),
        )
        for n in range(12)
    )
    if connection.vendor == "postgresql":
        with connection.cursor() as cursor:
            cursor.execute(f"VACUUM ANALYZE {Delivery._meta.db_table}")
    else:
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE")
    print(f"filled {records + 12:,} records in {time.perf_counter() - start:.0f}s")


def plans() -> None:
    """The database's plan of each query of the health of one host and engine, and of the
    report's query of the history."""
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from indexnow_django.conf import get_settings
    from indexnow_django.ops import health, report

    with CaptureQueriesContext(connection) as queries:
        health.host_engine_health(get_settings(), pairs=[("www.example.com", "bing")])
    with CaptureQueriesContext(connection) as reading:
        report.freshness(1, conf=get_settings())
    sqls = [query["sql"] for query in queries] + [reading.captured_queries[0]["sql"]]
    explain = "EXPLAIN QUERY PLAN " if connection.vendor == "sqlite" else "EXPLAIN "
    for sql in sqls:
        print("query:", sql[:160], "...")
        with connection.cursor() as cursor:
            cursor.execute(explain + sql)
            for row in cursor.fetchall():
                print("   ", " ".join(str(part) for part in row if part is not None))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default="/tmp/indexnow-bench-health.sqlite3")
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--runs", type=int, default=3)
    args = parser.parse_args()
    fresh_database(args.db)
    setup(args.db, "http://127.0.0.1:9/indexnow")
    import django
    from django.db import connection
    from django.test.utils import override_settings

    from indexnow_django import conf as conf_module
    from indexnow_django.ops import health, report

    print(f"Python {sys.version.split()[0]}, Django {django.get_version()}, {connection.vendor}")
    fill(args.records)
    with override_settings(
        INDEXNOW={
            "KEY": "bench-key-0123456789",
            "BASE_URL": "https://www.example.com",
            "HOSTS": HOSTS,
            "ENGINES": ENGINES,
        }
    ):
        conf_module.clear_cache()
        settings = conf_module.get_settings()
        found = health.host_engine_health(settings)
        trouble = [h.describe() for h in found if h.level != health.OK]
        print(f"{len(found)} hosts and engines, in trouble: {trouble}")
        seconds = best_of(args.runs, lambda: health.host_engine_health(settings))
        print(f"health of {len(found)} hosts and engines: {seconds * 1000:.1f} ms (best of runs)")
        plans()
        for days in (1, 7):
            seconds = best_of(args.runs, lambda days=days: report.freshness(days, conf=settings))
            flushed = sum(m.flushed for m in report.freshness(days, conf=settings).models)
            print(f"freshness report over {days} day(s), {flushed:,} URLs: {seconds:.2f} s")


if __name__ == "__main__":
    main()
