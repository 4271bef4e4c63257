"""What change tracking costs: saves, loading tracked objects, a request.

Each figure is measured with ``indexnow_django`` installed and with it left out
of ``INSTALLED_APPS`` (and ``MIDDLEWARE``), in child processes run in turns;
every figure is the best of its samples, the least disturbed by whatever else
the machine runs:

* ``save``: 1,000 saves of loaded objects of ``tests.testapp.models.Untracked``
  inside one transaction (as a bulk import runs them), each changing the title,
  in one unit of work, the commit included (where tracking works their URLs
  out). With the app, the model is registered with ``fields = ["title",
  "slug"]``, ``urls()`` reading the slug and ``url_fields = ["slug"]`` saying so.
  ``save of a URL field``: the same saves changing the slug (old and new URLs).
  ``save committed``: saves that each commit on their own (a view's), where the
  database's own commit weighs most. Also the queries of a save.
* ``load``: ``list(Untracked.objects.all())`` of 2,000 rows (with the app, the
  ``from_db`` hook keeping each row's values).
* ``request``: a request whose view saves 100 published ``Post`` objects
  (each with a changed title): with the app, its middleware, the test app's
  registrations (``Post``'s saying which fields its URLs read) and one flush.
  The flush goes to ``dispatch``: ``--dispatch queue`` (default) enqueues one
  job on a real redis-server started for the run; ``sync`` sends to a loopback
  engine after the response. The request is served through Django's WSGI
  handler as a server serves it: two figures, the time until the client has
  the whole response, and that plus what runs when the server closes the
  response (where the flush runs).

Run from the repository root::

    .venv/bin/python benchmarks/bench_tracking.py
    .venv/bin/python benchmarks/bench_tracking.py --db memory --dispatch sync
    .venv/bin/python benchmarks/bench_tracking.py --clock cpu   # on a busy machine

The saves counted in machine instructions, which nothing else on the machine
disturbs (valgrind's callgrind, so valgrind must be installed; a few minutes):
each child runs the same saves twice, 100 then ``--saves``, under callgrind,
and the difference over the extra saves is what one save costs, start-up and
the first save's one-time work (the URLconf, say) left out::

    .venv/bin/python benchmarks/bench_tracking.py --instructions --saves 600

Today's code against another, side by side in one run (each child runs on both
checkouts in turn, so both see the same machine)::

    git worktree add /tmp/base v1.0   # the release, or any commit
    .venv/bin/python benchmarks/bench_tracking.py --against /tmp/base

A SQLite file (the default) is the cheapest real database there is, so the
ratios it gives are close to the worst case; ``--db memory`` is cheaper still.
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


class UntrackedIndexNow:
    """The registration of the saves benchmark, made a ``ModelIndexNow`` in the child."""

    fields = ["title", "slug"]
    url_fields = ["slug"]  # urls() reads the slug alone

    def urls(self, obj: Any) -> list[str]:
        return [f"/untracked/{obj.slug}/"]


def child_model(args: argparse.Namespace, with_app: bool) -> dict[str, Any]:
    """Saves and loads of ``Untracked``: registered with the app installed, plain without."""
    configure(with_app=with_app, db=args.db, dispatch="sync")
    import contextlib

    from django.db import connection, transaction
    from django.test.utils import CaptureQueriesContext

    from tests.testapp.models import Untracked

    unit: Any = contextlib.nullcontext
    if with_app:
        from indexnow_django import ModelIndexNow, batch, register

        register(Untracked, type("UntrackedIndexNow", (UntrackedIndexNow, ModelIndexNow), {}))
        unit = batch

    Untracked.objects.bulk_create(
        Untracked(title=f"T{n}", slug=f"s{n}") for n in range(max(args.saves, LOADED_ROWS))
    )
    counter = iter(range(10**9))

    def saves(field: str, count: int, atomic: bool) -> float:
        """Seconds for ``count`` saves of loaded objects, each changing ``field``: inside
        one transaction (committed at the end, where tracking works their URLs out) or
        each committed on its own; in one unit of work, whose URLs are worked out but
        not flushed (the flush is measured by the request benchmark)."""
        objects = list(Untracked.objects.all()[:count])
        with unit() as collector:
            started = clock()
            with transaction.atomic() if atomic else contextlib.nullcontext():
                for obj in objects:
                    setattr(obj, field, f"{field[0]}{next(counter)}")
                    obj.save()
            if collector is not None:
                # Called settle() by builds before the package's words were sorted out.
                work_out = getattr(collector, "work_out_waiting", None) or collector.settle
                work_out()
            elapsed = clock() - started
            if collector is not None:
                collector.urls.clear()
        return elapsed

    def load() -> None:
        list(Untracked.objects.all()[:LOADED_ROWS])

    figures: dict[str, list[float]] = {name: [] for name in SAVE_FIGURES}
    figures["load"] = []
    for _ in range(args.rounds):
        for name, (field, atomic) in SAVE_FIGURES.items():
            count = args.saves if atomic else args.committed_saves
            figures[name].append(saves(field, count, atomic) / count)
        figures["load"].extend(timed(load, 10))
    obj = Untracked.objects.get(pk=1)
    with unit() as collector:
        with CaptureQueriesContext(connection) as captured:
            obj.title = f"q{next(counter)}"
            obj.save()
        if collector is not None:
            collector.urls.clear()  # the save's queries, not the flush's
    result: dict[str, Any] = {name: min(samples) for name, samples in figures.items()}
    result["queries_per_save"] = len(captured)
    result["code"] = measured_code()
    return result


#: The saves measured: figure -> (the field each save changes, inside one transaction).
SAVE_FIGURES = {
    "save": ("title", True),
    "save of a URL field": ("slug", True),
    "save committed": ("title", False),
}
#: Rows of the loading figure.
LOADED_ROWS = 2000


#: Saves of the smaller run of an instruction count (see :func:`count_instructions`).
COUNTED_BASE = 100


def child_count(args: argparse.Namespace, with_app: bool) -> None:
    """``args.saves`` saves of loaded objects, each changing the title, for callgrind to
    count: in one transaction (``--count-figure transaction``) or each committed on its
    own; first 100 more, in a run of their own, for what a first run does once."""
    configure(with_app=with_app, db=args.db, dispatch="sync")
    import contextlib

    from django.db import transaction

    from tests.testapp.models import Untracked

    unit: Any = contextlib.nullcontext
    if with_app:
        from indexnow_django import ModelIndexNow, batch, register

        register(Untracked, type("UntrackedIndexNow", (UntrackedIndexNow, ModelIndexNow), {}))
        unit = batch
    # The same rows, loaded alike, by both runs of a count: the first saves, the last
    # are for the first run.
    rows = args.count_rows
    Untracked.objects.bulk_create(Untracked(title=f"T{n}", slug=f"s{n}") for n in range(rows))
    loaded = list(Untracked.objects.all()[:rows])
    atomic = args.count_figure == "transaction"

    def saves(objects: list[Any]) -> None:
        with unit() as collector:
            with transaction.atomic() if atomic else contextlib.nullcontext():
                for obj in objects:
                    obj.title = f"{obj.title}+"
                    obj.save()
            if collector is not None:
                collector.work_out_waiting()
                collector.urls.clear()

    saves(loaded[-COUNTED_BASE:])
    saves(loaded[: args.saves])


def count_instructions(args: argparse.Namespace) -> None:
    """Machine instructions a save, app installed and left out (see the module's doc)."""
    import re
    import shutil

    if shutil.which("valgrind") is None:
        sys.exit("--instructions needs valgrind (Debian's package valgrind)")
    codes = {"this": ROOT}
    if args.against:
        codes = {"against": Path(args.against).resolve(), "this": ROOT}

    def counted(code: Path, role: str, figure: str, saves: int, tmp: str) -> int:
        env = {
            **os.environ,
            "BENCH_CODE": str(code),
            "PYTHONPATH": str(code),
            "PYTHONHASHSEED": "0",
            "BENCH_REDIS_URL": "redis://127.0.0.1:9",  # never asked (the saves only)
            "BENCH_ENGINE_URL": "http://127.0.0.1:9/indexnow",  # never asked
            "BENCH_DB_FILE": str(Path(tmp) / f"{role}-{figure}-{saves}.sqlite3"),
        }
        command = [
            "valgrind",
            "--tool=callgrind",
            "--callgrind-out-file=/dev/null",
            sys.executable,
            __file__,
            "--child",
            role,
            "--saves",
            str(saves),
            "--count-figure",
            figure,
            "--count-rows",
            str(args.saves + COUNTED_BASE),
        ]
        result = subprocess.run(command, env=env, cwd=code, capture_output=True, text=True)
        found = re.search(r"Collected : (\d+)", result.stderr)
        if result.returncode != 0 or found is None:
            sys.exit(f"{role} failed:\n{result.stdout}\n{result.stderr[-3000:]}")
        return int(found.group(1))

    extra = args.saves - COUNTED_BASE
    if extra <= 0:
        sys.exit(f"--instructions needs --saves above {COUNTED_BASE}")
    print(f"machine instructions a save (callgrind, {args.saves} saves less {COUNTED_BASE})")
    with tempfile.TemporaryDirectory() as tmp:
        for name, code in codes.items():
            for figure in ("transaction", "committed"):
                per_save = {}
                for role in ("count-without", "count-with"):
                    many = counted(code, role, figure, args.saves, tmp)
                    few = counted(code, role, figure, COUNTED_BASE, tmp)
                    per_save[role] = (many - few) / extra
                plain, tracked = per_save["count-without"], per_save["count-with"]
                where = "in one transaction" if figure == "transaction" else "each committed"
                print(
                    f"[{name}] saves {where}: app left out {plain:,.0f}, app installed "
                    f"{tracked:,.0f} (+{tracked - plain:,.0f}), ratio {tracked / plain:.3f}"
                )


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


def module_of(*names: str) -> Any:
    """The first of ``names`` that the measured checkout has (modules moved between
    builds): looked up in its files, since an editable install of another checkout
    would otherwise answer for a module this one lacks."""
    import importlib

    for name in names:
        base = CODE / Path(*name.split("."))
        if base.with_suffix(".py").exists() or (base / "__init__.py").exists():
            return importlib.import_module(name)
    raise ImportError(f"none of {', '.join(names)} in {CODE}")


def child_request(args: argparse.Namespace, with_app: bool, flush: bool = True) -> dict[str, Any]:
    configure(with_app=with_app, db=args.db, dispatch=args.dispatch)
    if with_app:
        from indexnow_django import register

        unregister = module_of(
            "indexnow_django.registration.registry", "indexnow_django.registry"
        ).unregister
        from tests.testapp.indexnow import PostIndexNow
        from tests.testapp.models import Post

        unregister(Post)  # the test app's registration, saying which fields URLs read
        register(Post, type("PostIndexNow", (PostIndexNow,), {"url_fields": ["slug", "status"]}))
    if not flush:
        dispatch = module_of("indexnow_django.units.dispatch", "indexnow_django.dispatch")
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
        "--committed-saves",
        str(args.committed_saves),
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


CHILDREN = [
    "count-with",
    "count-without",
    "model-with",
    "model-without",
    "request-with",
    "request-without",
    "request-collect-only",
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--child", choices=CHILDREN)
    parser.add_argument("--db", choices=["memory", "file"], default="file")
    parser.add_argument("--dispatch", choices=["queue", "sync"], default="queue")
    parser.add_argument(
        "--saves", type=int, default=1000, help="saves in one transaction (default 1000)"
    )
    parser.add_argument(
        "--committed-saves",
        type=int,
        default=200,
        help="saves committed one by one (default 200)",
    )
    parser.add_argument("--rounds", type=int, default=5, help="rounds in each child (default 5)")
    parser.add_argument("--runs", type=int, default=3, help="runs of each child (default 3)")
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
    parser.add_argument(
        "--instructions",
        action="store_true",
        help="count machine instructions a save under valgrind instead of timing",
    )
    parser.add_argument(
        "--count-figure", choices=["transaction", "committed"], default="transaction"
    )
    parser.add_argument("--count-rows", type=int, default=0)
    args = parser.parse_args()
    global clock
    clock = time.process_time if args.clock == "cpu" else time.perf_counter

    if args.child in ("count-with", "count-without"):
        child_count(args, with_app=args.child == "count-with")
        return
    if args.instructions:
        count_instructions(args)
        return
    if args.child in ("model-with", "model-without"):
        print(json.dumps(child_model(args, with_app=args.child == "model-with")))
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
        # The children run in turns, --runs times each: the best of each figure counts.
        # With --against, each child runs on both checkouts in turn.
        roles = [
            "model-without",
            "model-with",
            "request-without",
            "request-collect-only",
            "request-with",
        ] * args.runs
        for n, role in enumerate(roles):
            for name, code in codes.items():
                env["BENCH_DB_FILE"] = str(Path(tmp) / f"{name}-{role}-{n}.sqlite3")
                result = run_child(args, role, env, code)
                done = results[name]
                if role in done:  # the best of each figure counts
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
    with_model, without_model = results["model-with"], results["model-without"]
    without, with_app = results["request-without"], results["request-with"]
    collect_only = results["request-collect-only"]
    print(f"[{name}] code: {with_model['code']}")
    ratios: dict[str, float] = {}
    described = {
        "save": f"{args.saves:,} saves of loaded objects in one transaction (a tracked field)",
        "save of a URL field": f"{args.saves:,} saves in one transaction changing the URL",
        "save committed": f"{args.committed_saves:,} saves, each committed on its own",
    }
    for figure, text in described.items():
        plain, tracked = without_model[figure], with_model[figure]
        print(
            f"{text}: app left out {plain * 1e6:.1f} us a save, app installed "
            f"{tracked * 1e6:.1f} us (+{(tracked - plain) * 1e6:.1f} us), "
            f"ratio {tracked / plain:.2f}"
        )
        ratios[figure] = tracked / plain
    print(
        f"queries per save: app left out {without_model['queries_per_save']}, "
        f"app installed {with_model['queries_per_save']}"
    )
    plain, tracked = without_model["load"], with_model["load"]
    print(
        f"load of {LOADED_ROWS:,} rows: app left out {plain * 1e3:.2f} ms, app installed "
        f"{tracked * 1e3:.2f} ms, ratio {tracked / plain:.2f}"
    )
    ratios["load"] = tracked / plain
    print(
        f"request saving 100 tracked objects (best of {args.runs} x {args.requests}), until "
        f"the client has the response: app left out {without['ms']:.2f} ms "
        f"({without['queries']} queries), app installed {with_app['ms']:.2f} ms "
        f"({with_app['queries']} queries), ratio {with_app['ms'] / without['ms']:.2f}"
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
    ratios["request"] = with_app["ms"] / without["ms"]
    ratios["request with its flush"] = with_app["total_ms"] / without["total_ms"]
    return ratios


if __name__ == "__main__":
    main()
