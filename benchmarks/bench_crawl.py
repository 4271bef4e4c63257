"""Benchmark crawl receipts: what the middleware costs a request with ``CRAWL["ENABLED"]`` on and
off, side by side in one run, the Redis commands a crawler's request makes, and the report
(and a worker's drain) at a million history records with receipts.

1. The middleware: a request through Django's WSGI handler and the app's middleware to a
   small view, with a browser's user agent, in alternating rounds with crawl receipts on
   and off; the median of the rounds' time per request, and their ratio. Then the Redis
   commands (``INFO commandstats``) of many requests: a browser's (none expected) and
   Bingbot's (one ``XADD`` expected).
2. The history: ``--records`` ``Delivery`` records (default a million, as
   ``bench_health.py`` fills them, over 14 days), the waits of their accepted URLs and a
   receipt for the first URL of every other accepted record; the freshness report over 1
   and 7 days with crawl receipts on and off (best of ``--runs``), and one drain of
   ``--sightings`` verified Bingbot fetches of accepted URLs (DNS answered by a table, as
   in the tests).

Run from the repository root::

    .venv/bin/python benchmarks/bench_crawl.py --db /tmp/crawl.sqlite3
    .venv/bin/python benchmarks/bench_crawl.py --db postgres://127.0.0.1:5432/indexnow_bench

``--reuse`` measures again on the database an earlier run filled.

A redis-server of its own is started (or ``--redis`` names a database it may flush).
Nothing is sent.
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import time
from datetime import timedelta
from io import BytesIO
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_health import fill  # noqa: E402
from bench_history import best_of, fresh_database  # noqa: E402
from bench_submit import redis_database  # noqa: E402

BROWSER = "Mozilla/5.0 (X11; Linux x86_64; rv:133.0) Gecko/20100101 Firefox/133.0"
BINGBOT = "Mozilla/5.0 (compatible; bingbot/2.0; +http://www.bing.com/bingbot.htm)"
BINGBOT_ADDRESS = "157.55.39.1"


class Table:
    """Every address is a Bingbot's (the DNS answers of a real drain are cached a day)."""

    def reverse(self, address: str) -> str:
        return f"msnbot-{address.replace('.', '-')}.search.msn.com"

    def forward(self, name: str) -> list[str]:
        return [name.removeprefix("msnbot-").split(".")[0].replace("-", ".")]


def environ(user_agent: str, address: str = "192.0.2.10") -> dict[str, Any]:
    return {
        "REQUEST_METHOD": "GET",
        "PATH_INFO": "/blog/a-post/",
        "QUERY_STRING": "",
        "SERVER_NAME": "www.example.com",
        "SERVER_PORT": "443",
        "HTTP_HOST": "www.example.com",
        "HTTP_USER_AGENT": user_agent,
        "REMOTE_ADDR": address,
        "SERVER_PROTOCOL": "HTTP/1.1",
        "wsgi.url_scheme": "https",
        "wsgi.input": BytesIO(b""),
        "wsgi.errors": sys.stderr,
        "wsgi.version": (1, 0),
        "wsgi.multithread": False,
        "wsgi.multiprocess": True,
        "wsgi.run_once": False,
    }


def requests(handler: Any, count: int, user_agent: str, address: str = "192.0.2.10") -> float:
    """Seconds per request, over ``count`` requests."""
    base = environ(user_agent, address)

    def start_response(status: str, headers: list[Any]) -> None:
        pass

    started = time.perf_counter()
    for _ in range(count):
        response = handler(dict(base), start_response)
        for _chunk in response:
            pass
        response.close()
    return (time.perf_counter() - started) / count


def middleware(rounds: int, per_round: int, conn: Any) -> None:
    from django.core.handlers.wsgi import WSGIHandler
    from django.test.utils import override_settings

    from indexnow_django import conf as conf_module

    handler = WSGIHandler()
    settings = {}
    for mode in ("on", "off"):
        from django.conf import settings as django_settings

        settings[mode] = {
            **django_settings.INDEXNOW,
            "CRAWL": {"ENABLED": mode == "on"},
        }
    times: dict[str, list[float]] = {"on": [], "off": []}
    for number in range(rounds + 2):
        for mode in ("on", "off") if number % 2 else ("off", "on"):
            with override_settings(INDEXNOW=settings[mode]):
                conf_module.clear_cache()
                requests(handler, 50, BROWSER)  # warm
                spent = requests(handler, per_round, BROWSER)
            if number >= 2:  # the first two rounds warm up
                times[mode].append(spent)
    on, off = statistics.median(times["on"]), statistics.median(times["off"])
    print(
        f"a browser's request, median of {rounds} rounds of {per_round}: "
        f"CRAWL off {off * 1e6:.1f} µs, on {on * 1e6:.1f} µs, ratio {on / off:.4f}"
    )

    def commands() -> dict[str, int]:
        stats = conn.info("commandstats")
        return {name: int(value["calls"]) for name, value in stats.items()}

    with override_settings(INDEXNOW=settings["on"]):
        conf_module.clear_cache()
        requests(handler, 10, BINGBOT, BINGBOT_ADDRESS)  # the Redis client connects
        for label, agent, address in (
            ("a browser's", BROWSER, "192.0.2.10"),
            ("Bingbot's", BINGBOT, BINGBOT_ADDRESS),
        ):
            before = commands()
            spent = requests(handler, 1000, agent, address)
            after = commands()
            made = {
                name.removeprefix("cmdstat_"): after[name] - before.get(name, 0)
                for name in after
                if name != "cmdstat_info" and after[name] != before.get(name, 0)
            }
            per_request = {name: count / 1000 for name, count in made.items()}
            print(
                f"{label} request with CRAWL on: {spent * 1e6:.1f} µs, Redis commands per "
                f"request: {per_request or 'none'}"
            )
    conn.delete("indexnow:crawl:sightings")


def receipts() -> tuple[int, int]:
    """The waits of every accepted record (as the app records them with crawl receipts on)
    and a receipt for the first URL of every other one."""
    from indexnow_django.crawl.models import url_key
    from indexnow_django.models import CrawlReceipt, CrawlWait, Delivery

    made = waited = 0
    rows: list[CrawlReceipt] = []
    waits: list[CrawlWait] = []
    accepted = (
        Delivery.objects.filter(outcome="accepted")
        .order_by("pk")
        .values_list("pk", "engine", "batch_id", "sent_at", "urls")
    )
    for number, (pk, engine, batch_id, sent_at, urls) in enumerate(accepted.iterator(5000)):
        for one in urls.split("\n"):
            waits.append(
                CrawlWait(
                    url=one,
                    url_key=url_key(one),
                    delivery_id=pk,
                    engine=engine,
                    batch_id=batch_id,
                    accepted_at=sent_at,
                )
            )
        if number % 2 == 0:
            first = urls.split("\n", 1)[0]
            after = 30 + number % 3600
            rows.append(
                CrawlReceipt(
                    url=first,
                    url_key=url_key(first),
                    crawler="bingbot" if number % 4 else "yandexbot",
                    delivery_id=pk,
                    engine=engine,
                    batch_id=batch_id,
                    accepted_at=sent_at,
                    fetched_at=sent_at + timedelta(seconds=after),
                    after=after,
                    status=200,
                    address=BINGBOT_ADDRESS,
                )
            )
        if len(waits) >= 20_000:
            CrawlWait.objects.bulk_create(waits, batch_size=2000)
            CrawlReceipt.objects.bulk_create(rows, batch_size=2000, ignore_conflicts=True)
            made, waited, rows, waits = made + len(rows), waited + len(waits), [], []
    CrawlWait.objects.bulk_create(waits, batch_size=2000)
    CrawlReceipt.objects.bulk_create(rows, batch_size=2000, ignore_conflicts=True)
    return made + len(rows), waited + len(waits)


def history(args: argparse.Namespace, conn: Any) -> None:
    from django.db import connection
    from django.test.utils import override_settings

    from indexnow_django import conf as conf_module
    from indexnow_django.crawl.notice import STREAM_KEY, Sighting
    from indexnow_django.crawl.receipts import drain
    from indexnow_django.models import Delivery
    from indexnow_django.ops import report

    if not (args.reuse and Delivery.objects.exists()):
        fill(args.records)
        started = time.perf_counter()
        made, waited = receipts()
        with connection.cursor() as cursor:
            cursor.execute("ANALYZE" if connection.vendor == "sqlite" else "VACUUM ANALYZE")
        print(f"{waited:,} waits, {made:,} receipts in {time.perf_counter() - started:.0f}s")
    from django.conf import settings as django_settings

    for mode in ("off", "on"):
        with override_settings(
            INDEXNOW={**django_settings.INDEXNOW, "CRAWL": {"ENABLED": mode == "on"}}
        ):
            conf_module.clear_cache()
            conf = conf_module.get_settings()
            for days in (1, 7):
                seconds = best_of(
                    args.runs, lambda days=days, conf=conf: report.freshness(days, conf=conf)
                )
                print(f"freshness report over {days} day(s), CRAWL {mode}: {seconds:.2f} s")
    # A drain: Bingbot fetched URLs accepted in the last day (none of them has its receipt).
    with override_settings(INDEXNOW={**django_settings.INDEXNOW, "CRAWL": {"ENABLED": True}}):
        conf_module.clear_cache()
        conf = conf_module.get_settings()
        recent = (
            Delivery.objects.filter(outcome="accepted")
            .order_by("-sent_at")
            .values_list("urls", flat=True)[: args.sightings * 2]
        )
        now = time.time()
        wanted = [urls.split("\n")[-1] for urls in recent][: args.sightings]
        for number, fetched in enumerate(wanted):
            seen = Sighting(fetched, "bingbot", f"157.55.39.{number % 250}", 200, now)
            conn.xadd(STREAM_KEY, seen.fields())
        started = time.perf_counter()
        recorded = drain(conn, conf, resolver=Table(), batch=args.sightings)
        print(
            f"a drain of {len(wanted)} verified fetches at {Delivery.objects.count():,} records: "
            f"{len(recorded)} receipts in {time.perf_counter() - started:.2f} s"
        )


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--db", default="/tmp/indexnow-bench-crawl.sqlite3")
    parser.add_argument("--redis", default=None)
    parser.add_argument("--records", type=int, default=1_000_000)
    parser.add_argument("--rounds", type=int, default=200)
    parser.add_argument("--per-round", type=int, default=200)
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--sightings", type=int, default=100)
    parser.add_argument("--skip-history", action="store_true")
    parser.add_argument(
        "--reuse", action="store_true", help="keep the database of an earlier run (SQLite)"
    )
    args = parser.parse_args()
    with redis_database(args.redis) as (conn, redis_url):
        if not args.reuse:
            fresh_database(args.db)
        os.environ.update(
            DJANGO_SETTINGS_MODULE="crawl_settings", BENCH_DB=args.db, BENCH_REDIS_URL=redis_url
        )
        import django
        from django.core.management import call_command

        django.setup()
        call_command("migrate", verbosity=0)
        from django.db import connection

        print(
            f"Python {sys.version.split()[0]}, Django {django.get_version()}, {connection.vendor}"
        )
        middleware(args.rounds, args.per_round, conn)
        if not args.skip_history:
            history(args, conn)


if __name__ == "__main__":
    main()
