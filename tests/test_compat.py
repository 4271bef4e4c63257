"""The private internals of Django, redis-py, rq and the task backends the package relies on
(``indexnow_django/compat/``).

Each test fails with a message naming the internal when a new release changes it:
the fix then belongs in ``indexnow_django/compat/`` alone.
"""

from __future__ import annotations

from typing import Any

import django
import pytest
import redis
from django.core.cache import caches
from django.db import connection, transaction
from django.http import HttpResponse, StreamingHttpResponse
from django.test import override_settings

from indexnow_django import compat
from indexnow_django.compat import rq as compat_rq


def changed(what: str) -> str:
    return (
        f"{what} changed (Django {django.get_version()}, redis-py {redis.__version__}): "
        "adapt indexnow_django/compat/"
    )


# Running after the response --------------------------------------------------------


# Closing a response sends request_finished, whose receiver looks at the database
# connections a test before this one in the same process may have left open.
@pytest.mark.django_db
@pytest.mark.parametrize(
    "response", [HttpResponse("ok"), StreamingHttpResponse(iter([b"ok"]))], ids=type
)
def test_a_callback_runs_when_the_response_is_closed_not_before(response):
    ran: list[str] = []
    assert compat.run_after_response(response, lambda: ran.append("sent")), changed(
        "HttpResponseBase._resource_closers (the callbacks close() runs)"
    )
    assert ran == []
    response.close()
    assert ran == ["sent"], changed("HttpResponseBase.close() no longer runs _resource_closers")


def test_a_response_without_closers_is_refused_so_the_caller_runs_it_itself():
    class Bare:
        pass

    assert compat.can_run_after_response(Bare()) is False  # type: ignore[arg-type]
    assert compat.run_after_response(Bare(), lambda: None) is False  # type: ignore[arg-type]


# The Redis client behind a cache ---------------------------------------------------


def redis_caches(redis_url: str) -> dict[str, Any]:
    return {
        "django": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": f"{redis_url}/3",
            "KEY_PREFIX": "p",
        },
        "django_redis": {
            "BACKEND": "django_redis.cache.RedisCache",
            "LOCATION": f"{redis_url}/3",
            "KEY_PREFIX": "q",
        },
        "locmem": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    }


@pytest.mark.parametrize("alias", ["django", "django_redis"])
def test_a_value_the_client_writes_reads_back_through_the_cache(redis_url, alias):
    with override_settings(CACHES=redis_caches(redis_url)):
        cache = caches[alias]
        target = compat.redis_cache_client(cache)
        assert target is not None, changed(f"the client behind {type(cache).__module__}")
        client, make_key = target
        assert isinstance(client, redis.Redis), changed(f"{alias}'s client is not a redis.Redis")
        try:
            client.set(make_key("compat-probe"), 2)
            assert cache.get("compat-probe") == 2, changed(
                f"{alias}: a number the client writes no longer reads back through the cache "
                "(its key function or its serialization of integers)"
            )
        finally:
            cache.delete("compat-probe")


def test_other_caches_have_no_client(redis_url):
    with override_settings(CACHES=redis_caches(redis_url)):
        assert compat.redis_cache_client(caches["locmem"]) is None


# on_commit callbacks ---------------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_callback_waits_until_a_savepoint_rollback_drops_it():
    ran: list[str] = []
    with transaction.atomic():
        kept = compat.CommitCallback(connection, lambda: ran.append("kept"))
        try:
            with transaction.atomic():
                dropped = compat.CommitCallback(connection, lambda: ran.append("dropped"))
                assert dropped.stands(), changed("BaseDatabaseWrapper.run_on_commit entries")
                raise RuntimeError("roll back the savepoint")
        except RuntimeError:
            pass
        assert kept.stands(), changed("BaseDatabaseWrapper.run_on_commit entries")
        assert not dropped.stands(), changed(
            "savepoint_rollback() no longer removes its callbacks from run_on_commit"
        )
    assert ran == ["kept"]


@pytest.mark.django_db(transaction=True)
def test_while_the_commit_runs_the_callbacks_a_dropped_one_is_gone():
    """During the commit Django has taken the list away: a dropped callback must be freed."""
    seen: dict[str, bool] = {}
    handles: dict[str, compat.CommitCallback] = {}

    def first() -> None:
        seen.update({name: handle.stands() for name, handle in handles.items()})

    with transaction.atomic():
        handles["first"] = compat.CommitCallback(connection, first)
        try:
            with transaction.atomic():
                handles["dropped"] = compat.CommitCallback(connection, lambda: None)
                raise RuntimeError("roll back the savepoint")
        except RuntimeError:
            pass
        handles["last"] = compat.CommitCallback(connection, lambda: None)
    assert seen == {"first": True, "dropped": False, "last": True}, changed(
        "a callback dropped by a rollback is still referenced while the commit runs the "
        "others (CPython frees it at once; another interpreter, or Django keeping it, does not)"
    )


@pytest.mark.django_db(transaction=True)
def test_a_whole_rollback_drops_every_callback():
    with pytest.raises(RuntimeError), transaction.atomic():
        handle = compat.CommitCallback(connection, lambda: None)
        raise RuntimeError("roll back")
    assert not handle.stands(), changed("a rolled back transaction keeps its callbacks")


# Bounded waits ---------------------------------------------------------------------


@pytest.mark.parametrize("backend", ["django", "django_redis"])
@pytest.mark.slow
def test_the_cache_client_gives_up_on_a_frozen_redis_within_the_bound(private_redis, backend):
    caches_setting = redis_caches(private_redis.url)
    with override_settings(CACHES=caches_setting):
        client, make_key = compat.redis_cache_client(caches[backend])
        client.set(make_key("probe"), 1)  # a pooled connection, made before the freeze
        private_redis.freeze()
        try:
            with pytest.raises(redis.TimeoutError):
                client.get(make_key("probe"))
        finally:
            private_redis.thaw()
        # It timed out, on the sockets of a pool with our bound (not the cache's own).
        options = client.connection_pool.connection_kwargs
    for option in ("socket_timeout", "socket_connect_timeout"):
        assert 0 < options[option] <= compat.CACHE_REDIS_TIMEOUT, changed(
            f"{backend}: a client built with the cache's options no longer takes our timeouts"
        )


# rq's scheduler process ------------------------------------------------------------


def test_a_scheduler_that_never_started_has_not_died(redis_conn):
    from rq.scheduler import RQScheduler

    scheduler = RQScheduler(["default"], connection=redis_conn)
    assert hasattr(scheduler, "_process"), changed("RQScheduler._process (rq)")
    assert compat_rq.scheduler_died(scheduler) is False


def rq_changed(what: str) -> str:
    import rq

    return f"{what} changed (rq {rq.__version__}): adapt indexnow_django/compat/rq.py"


def test_a_scheduler_lock_holds_the_name_of_the_scheduler_for_interval_and_a_minute(redis_conn):
    from rq.scheduler import RQScheduler

    scheduler = RQScheduler(["compat-lock"], connection=redis_conn)
    assert scheduler._queue_names == {"compat-lock"} or list(scheduler._queue_names) == [
        "compat-lock"
    ], rq_changed("RQScheduler._queue_names")
    try:
        assert scheduler.acquire_locks() == {"compat-lock"}
        key = scheduler.get_locking_key("compat-lock")
        assert redis_conn.get(key) == scheduler.name.encode(), rq_changed(
            "the scheduler lock's value (the holder's name)"
        )
        assert 0 < redis_conn.ttl(key) <= int(scheduler.interval) + 60, rq_changed(
            "the scheduler lock's expiry"
        )

        def stopped(holder: Any) -> str:
            return "stopped"

        other = RQScheduler(["compat-lock"], connection=redis_conn)
        assert compat_rq.take_over_scheduler_lock(other, stopped) == [
            ("compat-lock", scheduler.name)
        ]
        assert redis_conn.get(key) == other.name.encode()
        assert other.acquire_locks() == {"compat-lock"}, rq_changed(
            "acquire_locks, with a lock already ours"
        )
    finally:
        redis_conn.delete(scheduler.get_locking_key("compat-lock"))


def test_a_job_a_worker_took_is_in_the_intermediate_queue_until_it_starts(redis_conn):
    from rq import Queue

    queue = Queue("compat-taken", connection=redis_conn)
    try:
        job = queue.enqueue("indexnow_django.jobs.deliver", ["/x/"])
        assert compat_rq.taken_not_started(queue) == []
        taken = Queue.dequeue_any([queue], None, connection=redis_conn)
        assert taken is not None and taken[0].id == job.id
        assert compat_rq.taken_not_started(queue) == [job.id], rq_changed(
            "where a worker keeps the job it took (Queue.intermediate_queue)"
        )
        compat_rq.forget_taken(queue, job.id)
        assert compat_rq.taken_not_started(queue) == [], rq_changed("IntermediateQueue.remove")
    finally:
        queue.delete(delete_jobs=True)
        redis_conn.delete(queue.intermediate_queue_key)


def test_rqs_worker_has_every_member_our_worker_class_overrides(redis_conn):
    import rq
    from rq.worker import Worker

    from indexnow_django.transports.rq.worker import UnitOfWorkMixin

    for name, why in compat_rq.WORKER_HOOKS.items():
        assert hasattr(Worker, name) or name in ("scheduler", "queues"), rq_changed(
            f"Worker.{name} (it {why})"
        )
    if rq.VERSION.startswith("2."):
        for name in compat_rq.WORKER_HOOKS_RQ2:
            assert hasattr(Worker, name), rq_changed(f"Worker.{name}")
    for name in ("dequeue_timeout", "should_run_maintenance_tasks"):
        assert isinstance(getattr(Worker, name), property), rq_changed(f"Worker.{name}")
    # The list is the worker class's: every member it overrides is in it.
    overridden = {
        name
        for name in vars(UnitOfWorkMixin)
        if hasattr(Worker, name) and not name.startswith("__")
    }
    assert overridden <= set(compat_rq.WORKER_HOOKS) | set(compat_rq.WORKER_HOOKS_RQ2)
    # What it reads from a worker: a worker's own attributes.
    worker = Worker(["compat-hooks"], connection=redis_conn)
    assert worker.queues and hasattr(worker, "scheduler"), rq_changed("Worker.queues, .scheduler")
    assert worker.redis_workers_keys, rq_changed("Worker.redis_workers_keys")


def test_a_work_horse_left_behind_is_waited_for():
    import subprocess
    import sys

    from rq.worker import Worker

    child = subprocess.Popen([sys.executable, "-c", "pass"])
    worker = Worker.__new__(Worker)
    worker._horse_pid = child.pid
    assert worker.horse_pid == child.pid, changed("Worker._horse_pid (rq): the work horse")
    compat_rq.reap_work_horse(worker)
    assert worker.horse_pid == 0
    assert child.poll() is not None  # waited for: no zombie is left
    compat_rq.reap_work_horse(worker)  # nothing to wait for: no error


# Task backends, told by their class -----------------------------------------------------


def test_task_backends_are_told_by_their_class(settings):
    from indexnow_django.compat import tasks as compat_tasks

    framework = compat_tasks.tasks_framework()
    assert framework is not None
    settings.TASKS = {
        "immediate": {"BACKEND": f"{framework.name}.backends.immediate.ImmediateBackend"},
        "database": {"BACKEND": "django_tasks_db.DatabaseBackend"},
    }
    immediate, database = framework.backends["immediate"], framework.backends["database"]
    assert compat_tasks.is_immediate_backend(immediate)
    assert not compat_tasks.is_immediate_backend(database)
    assert compat_tasks.is_database_backend(database)
    assert not compat_tasks.is_database_backend(immediate)
    assert not compat_tasks.is_rq_backend(database)


# A thread's database connection ------------------------------------------------


def test_a_threads_connection_is_the_one_django_gives_that_thread():
    import asyncio
    import threading

    from django.db import connections

    assert compat.thread_connection("default") is connections["default"], changed(
        "django.db.connections (one connection object per alias and thread)"
    )
    assert compat.thread_connection("default") is compat.thread_connection("default")
    seen: dict[str, Any] = {}

    def other_thread() -> None:
        seen["kept"] = compat.thread_connection("default")
        seen["django"] = connections["default"]
        connections["default"].close()

    worker = threading.Thread(target=other_thread)
    worker.start()
    worker.join()
    assert seen["kept"] is seen["django"]
    assert seen["kept"] is not connections["default"]

    async def in_a_loop() -> bool:
        return compat.thread_connection("default") is connections["default"]

    assert asyncio.run(in_a_loop())


# Our state on a model instance ---------------------------------------------------------


@pytest.mark.django_db
def test_a_value_kept_on_an_instance_goes_where_django_takes_the_instance():
    import copy
    import pickle

    from tests.testapp.models import Untracked

    obj = Untracked.objects.create(title="Kept", slug="kept")
    loaded = Untracked.objects.get(pk=obj.pk)
    assert compat.kept_state(loaded) is None, changed("ModelState (a query's object has no extra)")
    compat.keep_state(loaded, {"kept": 1})
    assert compat.kept_state(loaded) == {"kept": 1}
    assert loaded._state.adding is False and loaded._state.db == "default"
    # A copy shares it (callers that must not share record whose it is).
    assert compat.kept_state(copy.copy(loaded)) is compat.kept_state(loaded), changed(
        "Model.__getstate__ (a copy's _state is a shallow copy)"
    )
    assert compat.kept_state(pickle.loads(pickle.dumps(loaded))) == {"kept": 1}, changed(
        "Model.__reduce__ (a pickled instance keeps its _state)"
    )
    loaded.refresh_from_db()
    assert compat.kept_state(loaded) == {"kept": 1}


# A callback registered on every save ------------------------------------------------------


@pytest.mark.django_db(transaction=True)
def test_a_callback_registered_again_runs_stands_and_falls_as_registrations_do(
    django_capture_on_commit_callbacks: Any,
) -> None:
    runs: list[str] = []

    def callback() -> None:
        runs.append("ran")

    with transaction.atomic():
        compat.on_commit_again(connection, callback)
        compat.on_commit_again(connection, callback)
        assert len(connection.run_on_commit) == 2, changed(
            "BaseDatabaseWrapper.run_on_commit (a list of (savepoint ids, callback, robust))"
        )
        assert connection.run_on_commit[0] is connection.run_on_commit[1]  # nothing new made
        with transaction.atomic():
            compat.on_commit_again(connection, callback)  # another savepoint: its own entry
            assert connection.run_on_commit[2] is not connection.run_on_commit[1]
            compat.on_commit_again(connection, callback)
            transaction.set_rollback(True)
        assert len(connection.run_on_commit) == 2  # the savepoint's entries went with it
        with django_capture_on_commit_callbacks() as captured:
            compat.on_commit_again(connection, callback)  # seen by a block opened after
        assert captured == [callback]
    assert runs == ["ran"] * 3  # robust, each run as Django runs a registration


# Every management command -----------------------------------------------------------------


def test_every_command_runs_inside_the_unit_of_work_of_commands():
    import inspect

    from django.core.management.base import BaseCommand
    from django.core.management.commands.diffsettings import Command

    from indexnow_django.units.commands import command_unit

    execute = BaseCommand.execute
    assert getattr(execute, "indexnow_around", None) is command_unit
    assert list(inspect.signature(execute.__wrapped__).parameters) == [  # type: ignore[attr-defined]
        "self",
        "args",
        "options",
    ], changed("BaseCommand.execute(self, *args, **options)")
    assert Command.execute is execute, changed("BaseCommand.execute (a command overrides it)")
    compat.run_commands_in(command_unit)  # a second call changes nothing
    assert BaseCommand.execute is execute


# Wagtail ---------------------------------------------------------------------------------


def test_wagtail_still_reads_the_site_root_paths_cached_on_a_request():
    """The integration's own tests (``tests/wagtail_site``) give pages' URLs on each of
    several sites through this request; Wagtail's apps are not installed here."""
    from pathlib import Path

    import wagtail

    models = Path(wagtail.__file__).parent / "models"
    sources = "".join(path.read_text() for path in models.glob("*.py"))
    assert "cache_object._wagtail_cached_site_root_paths" in sources, changed(
        "Wagtail's Page._get_site_root_paths (the request's _wagtail_cached_site_root_paths)"
    )
    request = compat.wagtail_site_request("root")
    assert request._wagtail_cached_site_root_paths == ["root"]  # type: ignore[attr-defined]


def test_the_admin_markup_is_the_installed_djangos():
    """Read from Django's own templates: a release that changes them fails here."""
    from django.template.loader import get_template

    from indexnow_django.compat import admin_markup

    base = get_template("admin/base.html").template.source
    change_list = get_template("admin/change_list.html").template.source
    markup = admin_markup()
    assert markup["breadcrumbs_list"] == ('<ol class="breadcrumbs">' in base)
    assert markup["breadcrumbs_list"] != ('<div class="breadcrumbs">' in base)
    # 6.1: the block sits beside the title, before (and outside) the content block.
    before_content = base.split("{% block content %}")[0]
    assert markup["tools_in_header"] == ("{% block object-tools %}" in before_content)
    assert markup["tools_in_header"] != (
        "{% block object-tools %}" in change_list.split("{% block content %}")[1]
    )
