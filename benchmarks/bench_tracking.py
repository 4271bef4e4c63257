"""What change tracking costs: a tracked save, loading tracked objects, a request.

Three measurements, each in child processes; every figure is the best of its
samples, which is the least disturbed by whatever else the machine runs:

* ``save``: saving a loaded object of ``tests.testapp.models.Untracked`` whose
  slug changed, inside one unit of work, with the model registered
  (``fields=["title", "slug"]``, URLs from the slug) against the same model
  unregistered. Rounds alternate between the two. Also the queries per save.
* ``load``: ``list(Untracked.objects.all())`` of 1,000 rows, registered
  against unregistered (the ``from_db`` hook keeping the loaded values).
* ``request``: a request whose view saves 100 published ``Post`` objects
  (each with a changed title), with ``indexnow_django`` installed (its
  middleware, the test app's registrations, one flush) against the app left
  out of ``INSTALLED_APPS`` and ``MIDDLEWARE``. With the app, the flush goes
  to ``dispatch``: ``--dispatch queue`` (default) enqueues one job on a real
  redis-server started for the run; ``sync`` sends to a loopback engine after
  the response. The request is served through Django's WSGI handler as a
  server serves it: two figures, the time until the client has the whole
  response, and that plus what runs when the server closes the response
  (where the flush runs).

Run from the repository root::

    .venv/bin/python benchmarks/bench_tracking.py
    .venv/bin/python benchmarks/bench_tracking.py --db file --dispatch sync
    .venv/bin/python benchmarks/bench_tracking.py --clock cpu   # on a busy machine

Today's code against another, side by side in one run (each child runs on both
checkouts in turn, so both see the same machine)::

    git worktree add /tmp/base v1.0   # the release, or any commit
    .venv/bin/python benchmarks/bench_tracking.py --db file --against /tmp/base

SQLite in memory (the default) is the cheapest database there is, so the
ratios it gives are the worst case; ``--db file`` is closer to a real site.
Nothing leaves the machine.
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
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
#: The checkout whose code is measured: this one, or (in the children of ``--against``)
#: another, such as the last release checked out with ``git worktree add``.
CODE = Path(os.environ.get("BENCH_CODE", ROOT))
sys.path.insert(0, str(CODE))


# Child processes -------------------------------------------------------------------


def configure(with_app: bool, db: str, dispatch: str) -> None:
    import django
    from django.conf import settings

    apps = [
        "django.contrib.contenttypes",
        "django.contrib.auth",
        "django.contrib.sites",
        "django_rq",
        "tests.testapp",
    ]
    if with_app:
        apps.insert(4, "indexnow_django")
    redis_url = os.environ["BENCH_REDIS_URL"]
    settings.configure(
        SECRET_KEY="indexnow-django-benchmark",
        USE_TZ=True,
        ALLOWED_HOSTS=["*"],
        INSTALLED_APPS=apps,
        MIDDLEWARE=["indexnow_django.middleware.IndexNowMiddleware"] if with_app else [],
        ROOT_URLCONF=__name__,
        DEFAULT_AUTO_FIELD="django.db.models.BigAutoField",
        DATABASES={
            "default": {
                "ENGINE": "django.db.backends.sqlite3",
                "NAME": ":memory:" if db == "memory" else os.environ["BENCH_DB_FILE"],
            }
        },
        CACHES={"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}},
        RQ_QUEUES={"default": {"URL": f"{redis_url}/0"}},
        INDEXNOW={
            "KEY": "bench-key-0123456789",
            "BASE_URL": "https://www.example.com",
            "ENGINES": [os.environ["BENCH_ENGINE_URL"]],
            "DISPATCH": dispatch,
            "DEBOUNCE": {"TTL": 0},
        },
        LOGGING_CONFIG=None,
    )
    django.setup()
    from django.core.management import call_command

    call_command("migrate", verbosity=0, run_syncdb=True)


#: The clock of the samples: wall time, or with ``--clock cpu`` this process's CPU time
#: (what the code itself costs, whatever else a loaded machine runs meanwhile).
clock = time.perf_counter


def timed(function: Any, rounds: int) -> list[float]:
    samples = []
    for _ in range(rounds):
        started = clock()
        function()
        samples.append(clock() - started)
    return samples


def child_model(args: argparse.Namespace) -> dict[str, Any]:
    configure(with_app=True, db=args.db, dispatch="sync")
    from django.db import connection
    from django.test.utils import CaptureQueriesContext

    from indexnow_django import ModelIndexNow, batch
    from indexnow_django.registration.registry import register, unregister
    from tests.testapp.models import Untracked

    class UntrackedIndexNow(ModelIndexNow):
        fields = ["title", "slug"]

        def urls(self, obj: Any) -> list[str]:
            return [f"/untracked/{obj.slug}/"]

    Untracked.objects.bulk_create(Untracked(title=f"T{n}", slug=f"s{n}") for n in range(1000))
    counter = iter(range(10**9))

    def saves() -> list[float]:
        """Seconds per save of each run of 50 saves (short runs: the least disturbed)."""
        objects = list(Untracked.objects.all()[: args.saves])
        samples = []
        with batch() as collector:
            for start in range(0, len(objects), 50):
                started = clock()
                for obj in objects[start : start + 50]:
                    obj.slug = f"s{next(counter)}"
                    obj.save()
                # The URLs of the saves, worked out now (what the flush would do first).
                collector.settle()
                samples.append((clock() - started) / len(objects[start : start + 50]))
            collector.urls.clear()  # the flush is measured by the request benchmark
        return samples

    def load() -> None:
        list(Untracked.objects.all())

    save_times: dict[str, list[float]] = {"untracked": [], "tracked": []}
    load_times: dict[str, list[float]] = {"untracked": [], "tracked": []}
    queries: dict[str, int] = {}
    for _ in range(args.rounds):
        for kind in ("untracked", "tracked"):
            if kind == "tracked":
                register(Untracked, UntrackedIndexNow)
            try:
                save_times[kind].extend(saves())
                load_times[kind].extend(timed(load, 10))
                obj = Untracked.objects.get(pk=1)
                with batch() as collector:
                    with CaptureQueriesContext(connection) as captured:
                        obj.slug = f"q{next(counter)}"
                        obj.save()
                    collector.urls.clear()  # the save's queries, not the flush's
                queries[kind] = len(captured)
            finally:
                if kind == "tracked":
                    unregister(Untracked)
    return {
        "code": measured_code(),
        "save_us": {k: min(v) * 1e6 for k, v in save_times.items()},
        "load_ms": {k: min(v) * 1e3 for k, v in load_times.items()},
        "queries_per_save": queries,
    }


# The view of the request benchmark (ROOT_URLCONF is this module).
def save_posts(request: Any) -> Any:
    from django.http import HttpResponse

    from tests.testapp.models import Post

    stamp = request.GET["stamp"]
    for post in Post.objects.filter(status="published")[:100]:
        post.title = f"{post.slug} {stamp}"
        post.save()
    return HttpResponse("saved")


urlpatterns: list[Any] = []


def child_request(args: argparse.Namespace, with_app: bool, flush: bool = True) -> dict[str, Any]:
    configure(with_app=with_app, db=args.db, dispatch=args.dispatch)
    if not flush:
        from indexnow_django.units import dispatch

        dispatch.dispatch = lambda urls, **kwargs: None
    from django.core.handlers.wsgi import WSGIHandler
    from django.core.signals import request_finished, request_started
    from django.db import close_old_connections, connection
    from django.test import RequestFactory
    from django.test.utils import CaptureQueriesContext
    from django.urls import path

    from tests.testapp.models import Post

    urlpatterns.append(path("save/", save_posts))
    Post.objects.bulk_create(
        Post(title=f"Post {n}", slug=f"post-{n}", status="published") for n in range(100)
    )
    # Served the way a WSGI server serves it (the database connection kept, as
    # Django's test client keeps it): the client has the response once its
    # body is out; the server closes it afterwards.
    request_started.disconnect(close_old_connections)
    request_finished.disconnect(close_old_connections)
    handler = WSGIHandler()
    factory = RequestFactory()
    counter = iter(range(10**9))
    served: list[float] = []
    closed: list[float] = []

    def request() -> None:
        environ = factory.get("/save/", {"stamp": str(next(counter))}).environ
        status: list[str] = []
        started = clock()
        body = handler(environ, lambda line, headers: status.append(line))
        b"".join(body)
        sent = clock()
        body.close()  # type: ignore[attr-defined]
        served.append(sent - started)
        closed.append(clock() - sent)
        assert status == ["200 OK"], status

    for _ in range(5):  # warm up
        request()
    served.clear()
    closed.clear()
    for _ in range(args.requests):
        request()
    totals = [a + b for a, b in zip(served, closed, strict=True)]
    with CaptureQueriesContext(connection) as captured:
        request()
    return {
        "ms": min(served) * 1e3,
        "total_ms": min(totals) * 1e3,
        "queries": len(captured),
        "code": measured_code(),
    }


# The parent --------------------------------------------------------------------------


def run_child(
    args: argparse.Namespace, role: str, env: dict[str, str], code: Path = ROOT
) -> dict[str, Any]:
    env = {**env, "BENCH_CODE": str(code), "PYTHONPATH": str(code)}
    command = [
        sys.executable,
        __file__,
        "--child",
        role,
        "--db",
        args.db,
        "--dispatch",
        args.dispatch,
        "--saves",
        str(args.saves),
        "--rounds",
        str(args.rounds),
        "--requests",
        str(args.requests),
        "--clock",
        args.clock,
    ]
    result = subprocess.run(command, env=env, cwd=code, capture_output=True, text=True, check=False)
    if result.returncode != 0:
        sys.exit(f"{role} failed:\n{result.stdout}\n{result.stderr}")
    data: dict[str, Any] = json.loads(result.stdout.strip().splitlines()[-1])
    return data


def measured_code() -> str:
    """Where the package a child measures comes from (so a run shows what it compared)."""
    import indexnow_django

    return str(Path(indexnow_django.__file__).resolve().parent.parent)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument(
        "--child", choices=["model", "request-with", "request-without", "request-collect-only"]
    )
    parser.add_argument("--db", choices=["memory", "file"], default="memory")
    parser.add_argument("--dispatch", choices=["queue", "sync"], default="queue")
    parser.add_argument("--saves", type=int, default=1000, help="saves per round (default 1000)")
    parser.add_argument("--rounds", type=int, default=7, help="rounds of saves (default 7)")
    parser.add_argument("--requests", type=int, default=30, help="timed requests (default 30)")
    parser.add_argument(
        "--against",
        metavar="DIR",
        help="another checkout of the project (git worktree add DIR <commit>): each child "
        "runs on it and on this one in turn, and the ratios are shown side by side",
    )
    parser.add_argument(
        "--clock",
        choices=["wall", "cpu"],
        default="wall",
        help="wall time (default), or this process's CPU time (steadier on a busy machine)",
    )
    args = parser.parse_args()
    global clock
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    if args.child == "model":
        print(json.dumps(child_model(args)))
        return
    if args.child in ("request-with", "request-without", "request-collect-only"):
        with_app = args.child != "request-without"
        flush = args.child != "request-collect-only"
        print(json.dumps(child_request(args, with_app=with_app, flush=flush)))
        return

    from indexnow_django.testing import LoopbackEngine
    from tests.services import ensure_redis

    codes = {"this": ROOT}
    if args.against:
        codes = {"against": Path(args.against).resolve(), "this": ROOT}
    redis_url = ensure_redis()
    results: dict[str, dict[str, Any]] = {name: {} for name in codes}
    with LoopbackEngine() as engine, tempfile.TemporaryDirectory() as tmp:
        env = {**os.environ, "BENCH_REDIS_URL": redis_url, "BENCH_ENGINE_URL": engine.url}
        # The request children run in turns, three times each: the best run counts. With
        # --against, each child runs on both checkouts in turn.
        roles = ["model"] + ["request-without", "request-collect-only", "request-with"] * 3
        for n, role in enumerate(roles):
            for name, code in codes.items():
                env["BENCH_DB_FILE"] = str(Path(tmp) / f"{name}-{role}-{n}.sqlite3")
                result = run_child(args, role, env, code)
                done = results[name]
                if role in done and role != "model":  # the best of each figure counts
                    result = {
                        key: min(value, done[role][key]) if key != "code" else value
                        for key, value in result.items()
                    }
                done[role] = result

    print(f"database: SQLite {args.db}; dispatch: {args.dispatch}; clock: {args.clock}")
    ratios = {name: report(name, results[name], args) for name in codes}
    if args.against:
        print("side by side (app installed / app left out), against -> this:")
        for figure, against in ratios["against"].items():
            print(f"  {figure}: {against:.2f} -> {ratios['this'][figure]:.2f}")


def report(name: str, results: dict[str, Any], args: argparse.Namespace) -> dict[str, float]:
    """Print one checkout's figures; return its ratios by figure."""
    model = results["model"]
    without, with_app = results["request-without"], results["request-with"]
    collect_only = results["request-collect-only"]
    save, load = model["save_us"], model["load_ms"]
    print(f"[{name}] code: {model['code']}")
    print(
        f"save of a loaded object (best run of 50 saves, {args.rounds} rounds of {args.saves}): "
        f"untracked {save['untracked']:.1f} us, tracked {save['tracked']:.1f} us, "
        f"ratio {save['tracked'] / save['untracked']:.2f}"
    )
    print(
        f"queries per save: untracked {model['queries_per_save']['untracked']}, "
        f"tracked {model['queries_per_save']['tracked']}"
    )
    print(
        f"load of 1,000 objects (best of {args.rounds * 10}): "
        f"untracked {load['untracked']:.2f} ms, tracked {load['tracked']:.2f} ms, "
        f"ratio {load['tracked'] / load['untracked']:.2f}"
    )
    print(
        f"request saving 100 tracked objects (best of 3 x {args.requests}), until the client "
        f"has the response: app left out {without['ms']:.2f} ms ({without['queries']} queries), "
        f"app installed {with_app['ms']:.2f} ms ({with_app['queries']} queries), "
        f"ratio {with_app['ms'] / without['ms']:.2f}"
    )
    print(
        f"  with the work done after it (the flush, when the server closes the response): "
        f"app left out {without['total_ms']:.2f} ms, app installed {with_app['total_ms']:.2f} ms, "
        f"ratio {with_app['total_ms'] / without['total_ms']:.2f}"
    )
    collect_ms = collect_only["total_ms"]
    print(
        f"  of which tracking and collecting (dispatch replaced by a no-op): "
        f"{collect_ms:.2f} ms, ratio {collect_ms / without['total_ms']:.2f}"
    )
    return {
        "load": load["tracked"] / load["untracked"],
        "save": save["tracked"] / save["untracked"],
        "request": with_app["ms"] / without["ms"],
        "request with its flush": with_app["total_ms"] / without["total_ms"],
    }


if __name__ == "__main__":
    main()
