"""What the Redis server spends per URL on the debounce store, against what it could spend.

``bench_submit.py`` measures a bulk submission end to end; with debounce on,
most of the extra time is the Redis server running the claim script. This
benchmark starts a redis-server of its own (or uses ``--redis``, a database
it may flush) and measures the server's own CPU time (``INFO cpu``, before
and after) for N URLs (default 1,000,000) sent in batches of 10,000 as one
script call each, as the store does, for:

* ``claim``: the store's claim script, as ``DebounceStore.claim`` calls it
  (a new claim of new URLs: what a bulk submission does);
* ``lua only``: a script that only walks the batch's digests (no Redis call);
* ``read each``: one read per URL (``GETBIT`` on one bitmap);
* ``write each``: one write per URL (``SETBIT`` on one bitmap), the cheapest
  write Redis has: what any store that marks each URL at least costs;
* ``hsetnx each``: one ``HSETNX`` per URL into 16,384 hashes, the claim's
  own write without its bookkeeping.

It prints, for each, the server's CPU seconds per million URLs (which is also
its microseconds per URL) and its milliseconds per batch. Run
from the repository root::

    .venv/bin/python benchmarks/bench_store.py
    .venv/bin/python benchmarks/bench_store.py --redis redis://127.0.0.1:6379/9
"""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))

from bench_submit import redis_database  # noqa: E402

from indexnow_django.sending.debounce.redis_store import EXPIRY_SLACK, claim_script, digests  # noqa: E402

BATCH = 10_000
TTL = 600

# Each walks ARGV[1], the batch's 8-byte digests, as the claim script does.
_WALK = """
local blob, call, sub, byte = ARGV[1], redis.call, string.sub, string.byte
local out, n = {}, 0
for i = 1, #blob, 8 do
    %s
    n = n + 1
    out[n] = c
end
return table.concat(out)
"""
LOOPS = {
    "lua only": "local key, f, c = 'h:' .. sub(blob, i, i + 1), sub(blob, i + 2, i + 7), 'w'",
    "read each": (
        "local a, b, d = byte(blob, i, i + 2) "
        "local c = call('GETBIT', 'bits', (a * 256 + b) * 256 + d) == 0 and 'w' or 'd'"
    ),
    "write each": (
        "local a, b, d = byte(blob, i, i + 2) "
        "local c = call('SETBIT', 'bits', (a * 256 + b) * 256 + d, 1) == 0 and 'w' or 'd'"
    ),
    "hsetnx each": (
        "local c = call('HSETNX', 'h:' .. sub(blob, i, i + 1), sub(blob, i + 2, i + 7), 1) == 1"
        " and 'w' or 'd'"
    ),
}


def server_cpu(conn: Any) -> float:
    info = conn.info("cpu")
    return float(info["used_cpu_user"]) + float(info["used_cpu_sys"])


def run(conn: Any, name: str, batches: list[bytes]) -> float:
    """Server CPU seconds for every batch through the script ``name``."""
    conn.flushdb()
    if name == "claim":
        sha = conn.script_load(claim_script())
        now = int(time.time())

        def call(blob: bytes) -> Any:
            prefix = "bench:claim:"
            args = [prefix, now, TTL, TTL, 120, "bench-holder", "claim", blob, b"", EXPIRY_SLACK]
            return conn.evalsha(sha, 0, *args)
    else:
        sha = conn.script_load(_WALK % LOOPS[name])

        def call(blob: bytes) -> Any:
            return conn.evalsha(sha, 0, blob)

    before = server_cpu(conn)
    for blob in batches:
        call(blob)
    return server_cpu(conn) - before


def main() -> None:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--urls", type=int, default=1_000_000, help="how many URLs")
    parser.add_argument("--redis", help="a redis:// URL of a database to flush and use")
    args = parser.parse_args()

    with redis_database(args.redis) as (conn, _):
        urls = [f"https://www.example.com/articles/{n}/" for n in range(args.urls)]
        batches = [digests(urls[i : i + BATCH]) for i in range(0, len(urls), BATCH)]
        del urls
        print(f"{args.urls:,} new URLs in batches of {BATCH:,}, one script call per batch")
        print(f"{'script':<12} {'server CPU s per 1M URLs':>25} {'ms per batch':>13}")
        for name in ("claim", *LOOPS):
            seconds = run(conn, name, batches)
            per_million = seconds * 1_000_000 / args.urls
            per_batch = seconds * 1000 / len(batches)
            print(f"{name:<12} {per_million:>25.2f} {per_batch:>13.1f}")


if __name__ == "__main__":
    main()
