"""The internals of Django, Wagtail and redis-py this package relies on, one function each;
rq's are in :mod:`.rq`, the task backends' in :mod:`.tasks`.

Nothing else in the package touches a private attribute of Django, Wagtail
or a cache backend, or changes a class it does not own process-wide: it
calls one of these. (Change tracking hooks ``from_db`` and
``refresh_from_db`` of the tracked models, and of them only, as a field
tracker patches the class it is declared on.) Each has a test in
``tests/test_compat.py`` that fails, naming the change, when a new Django,
Wagtail, django-redis or redis-py release changes the internal it reads:

* :func:`run_after_response`: ``HttpResponseBase._resource_closers``, the
  callbacks Django runs when the server closes a response (after the last
  byte went out), where a synchronous send waits;
* :func:`redis_cache_client`: how Django's ``RedisCache`` (``cache._cache``:
  its servers, pool class and options) and django-redis's ``DefaultClient``
  (its connection factory) build their redis-py clients, to build one with
  short timeouts for the debounce store's atomic claims;
* :class:`CommitCallback`: ``BaseDatabaseWrapper.run_on_commit``, the
  callbacks registered with ``transaction.on_commit`` that still wait for
  the commit (a rolled-back savepoint removes its own, by replacing the
  list), and CPython freeing a dropped callback at once;
* :func:`admin_markup`: the markup of Django's own admin templates that ours
  repeat (breadcrumbs, where the object tools sit), which changed in 6.1;
* :func:`thread_connection`: that ``django.db.connections`` keeps one
  connection object per alias for the life of a thread that runs no event
  loop (asgiref's thread-critical ``Local``), so a tracked save need not ask
  it again (each lookup costs about a microsecond);
* :func:`keep_state` and :func:`kept_state`: a model instance's ``_state``
  (Django's ``ModelState``) takes an attribute of ours, and goes with the
  instance wherever Django takes it (a copy shares it, a pickle keeps it);
* :func:`run_commands_in`: ``BaseCommand.execute`` runs every management
  command (``manage.py``, ``call_command``), and Django sends no signal when
  a command starts or ends: it is wrapped once when Django starts (unless
  ``INDEXNOW["COMMAND_UNITS"]`` is ``False``), the one change this package
  makes to a class it does not own;
* :func:`parler_translations`: django-parler's ``_parler_meta`` on a
  ``TranslatableModel``, which names its translation relations and their
  fields;
* :func:`wagtail_site_request`: Wagtail's per-request cache of site root
  paths (``request._wagtail_cached_site_root_paths``), through which a page
  gives its URL on one given site.

"""

from __future__ import annotations

import asyncio
import contextlib
import functools
import importlib
import importlib.util
import threading
import weakref
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from django.core.cache import BaseCache
    from django.core.management.base import BaseCommand
    from django.db.backends.base.base import BaseDatabaseWrapper
    from django.db.models import Model
    from django.http import HttpRequest
    from django.http.response import HttpResponseBase

__all__ = [
    "STATE_ATTRIBUTE",
    "CommitCallback",
    "admin_markup",
    "can_run_after_response",
    "keep_state",
    "kept_state",
    "on_commit_again",
    "parler_translations",
    "redis_cache_client",
    "run_after_response",
    "run_commands_in",
    "scheduler_died",
    "scheduler_running",
    "take_over_scheduler_lock",
    "tasks_framework",
    "thread_connection",
    "wagtail_site_request",
]


def can_run_after_response(response: HttpResponseBase) -> bool:
    """Whether :func:`run_after_response` can defer a call until ``response`` is closed."""
    return isinstance(getattr(response, "_resource_closers", None), list)


def run_after_response(response: HttpResponseBase, callback: Callable[[], None]) -> bool:
    """Run ``callback`` when the server closes ``response`` (its content has gone out).

    Returns ``False``, without registering anything, when this Django's
    responses keep no closer list; the caller then runs ``callback`` itself.
    """
    if not can_run_after_response(response):
        return False
    closers: list[Callable[[], None]] = response._resource_closers  # type: ignore[attr-defined]
    closers.append(callback)
    return True


#: Seconds a call through :func:`redis_cache_client` waits for Redis at most.
CACHE_REDIS_TIMEOUT = 2.0

_bounded_clients: dict[tuple[Any, ...], Any] = {}
_bounded_lock = threading.Lock()


def redis_cache_client(cache: BaseCache) -> tuple[Any, Callable[[str], str]] | None:
    """A redis-py client that writes for ``cache``, and its key function; ``None`` if none.

    For Django's ``RedisCache`` and django-redis's ``RedisCache`` with its
    default (or Sentinel) client: both store small integers as plain numbers,
    so a value written by the client reads back through the cache API. Any
    other backend (django-redis's herd and shard clients included) gives
    ``None``.

    The client talks to the cache's (first) server with the cache's options,
    through a pool of its own whose connect and read timeouts are at most
    :data:`CACHE_REDIS_TIMEOUT`: the cache's own client may wait 5 seconds per
    call (redis-py's default) or for ever (a cache that sets no timeout), too
    long for a send made on the request path. One such client per server and
    options, shared by every thread.
    """
    from django.core.cache.backends.redis import RedisCache

    if isinstance(cache, RedisCache):
        backend: Any = cache._cache
        server = backend._servers[0]
        options = _bounded_options(backend._pool_options)
        # The options hold classes and numbers: their repr tells configurations apart.
        settings = repr(sorted(options.items()))
        key: tuple[Any, ...] = ("django", backend._pool_class, server, settings)

        def make_django() -> Any:
            pool = backend._pool_class.from_url(server, **options)
            return backend._client(connection_pool=pool)

        # ``make_key`` without validation: callers use short hex digests.
        return _bounded_client(key, make_django), cache.make_key
    if type(cache).__module__.split(".")[0] != "django_redis":
        return None
    clients = importlib.import_module("django_redis.client")
    client = getattr(cache, "client", None)
    if not isinstance(client, clients.DefaultClient) or isinstance(
        client, (clients.HerdClient, clients.ShardClient)
    ):
        return None
    factory = client.connection_factory
    params = _bounded_options(factory.make_connection_params(client._server[0]))
    redis_key: tuple[Any, ...] = ("django_redis", type(factory), repr(sorted(params.items())))

    def make_django_redis() -> Any:
        pool = factory.get_connection_pool(params)
        return factory.redis_client_cls(connection_pool=pool, **factory.redis_client_cls_kwargs)

    return _bounded_client(redis_key, make_django_redis), lambda key: str(client.make_key(key))


def _bounded_options(options: dict[str, Any]) -> dict[str, Any]:
    """``options`` with connect and read timeouts of at most :data:`CACHE_REDIS_TIMEOUT`."""
    bounded = dict(options)
    for option in ("socket_timeout", "socket_connect_timeout"):
        value = bounded.get(option)
        bounded[option] = CACHE_REDIS_TIMEOUT if not value else min(value, CACHE_REDIS_TIMEOUT)
    return bounded


def _bounded_client(key: tuple[Any, ...], make: Callable[[], Any]) -> Any:
    with _bounded_lock:
        client = _bounded_clients.get(key)
        if client is None:
            client = _bounded_clients[key] = make()
        return client


class CommitCallback:
    """A callback registered with ``on_commit`` (robust), and whether it stands.

    Holds the callback weakly: the connection alone keeps it alive.
    """

    def __init__(self, connection: BaseDatabaseWrapper, callback: Callable[[], None]) -> None:
        self._connection = connection
        self._callback = weakref.ref(callback)
        connection.on_commit(callback, robust=True)

    def stands(self) -> bool:
        """Whether the callback will run (or is running) at the commit.

        False once a rollback (of the transaction, or of a savepoint it was
        registered in) dropped it. A dropped callback is known by being gone:
        Django replaces the list of callbacks without the dropped entries (or
        with an empty one), and CPython frees what nothing refers to at once,
        so asking costs the same however many callbacks wait, before the
        commit or while it runs them.
        """
        return self._callback() is not None


def on_commit_again(connection: BaseDatabaseWrapper, callback: Callable[[], None]) -> None:
    """``connection.on_commit(callback, robust=True)``, for a callback registered often.

    When the last callback registered on ``connection`` is ``callback`` itself,
    robust, at the savepoints open now, that entry is registered again as it is:
    Django's list of callbacks refers to it once more, and nothing is made (a
    transaction of many saves keeps no more per save than that reference). A
    savepoint's rollback drops both, as it would drop two registrations; a test's
    ``captureOnCommitCallbacks`` sees the callback in its block, as it would.
    Django keeps each entry as ``(savepoint ids, callback, robust)`` (4.2 and later).
    """
    waiting: list[Any] = connection.run_on_commit  # (ids, callback, robust) since 4.2
    if waiting:
        last = waiting[-1]
        if last[1] is callback and last[2] is True:
            ids = connection.savepoint_ids
            if len(last[0]) == len(ids) and last[0].issuperset(ids):
                waiting.append(last)
                return
    connection.on_commit(callback, robust=True)


_threads = threading.local()


def thread_connection(alias: str) -> BaseDatabaseWrapper:
    """``django.db.connections[alias]``, kept for this thread after its first lookup.

    Outside an event loop Django's connection handler is a plain thread-local
    (one object per alias until the thread ends), so keeping it per thread
    gives the same object. Inside a running event loop (code allowed there by
    ``DJANGO_ALLOW_ASYNC_UNSAFE``) connections follow the task, so each call asks.
    Django replaces a thread's connection only where a server thread starts
    (``connections[alias] = conn`` in a live test server, before it serves
    anything), so before a lookup here.
    """
    if asyncio._get_running_loop() is None:
        try:
            found: BaseDatabaseWrapper = _threads.connections[alias]
        except (AttributeError, KeyError):
            pass
        else:
            return found
    from django.db import connections

    if asyncio._get_running_loop() is not None:
        return connections[alias]
    kept: dict[str, BaseDatabaseWrapper] | None = _threads.__dict__.get("connections")
    if kept is None:
        kept = _threads.connections = {}
    found = kept[alias] = connections[alias]
    return found


#: The attribute of a model instance's ``_state`` that :func:`keep_state` sets.
#: The key of what :func:`keep_state` keeps in ``instance._state.__dict__`` (read there
#: directly where a save's signal handlers would pay for a call).
STATE_ATTRIBUTE = "indexnow"


def kept_state(instance: Model) -> Any:
    """What :func:`keep_state` kept with ``instance`` (``None``: nothing)."""
    return instance._state.__dict__.get(STATE_ATTRIBUTE)


def keep_state(instance: Model, value: Any) -> None:
    """Keep ``value`` with ``instance``, on its ``_state``.

    Django copies ``_state`` with the instance (``copy.copy`` and pickling), so
    a copy starts with the same value: an object that must not be shared
    records whose it is. An object Django builds (a query, ``refresh_from_db``)
    starts without one.
    """
    instance._state.__dict__[STATE_ATTRIBUTE] = value


def run_commands_in(
    around: Callable[[BaseCommand], contextlib.AbstractContextManager[Any]],
) -> None:
    """Run every management command's ``execute()`` inside ``around(command)``.

    ``BaseCommand.execute`` is wrapped once (calling this again changes nothing).
    """
    from django.core.management.base import BaseCommand

    original = BaseCommand.execute
    if getattr(original, "indexnow_around", None) is not None:
        return

    @functools.wraps(original)
    def execute(self: BaseCommand, *args: Any, **options: Any) -> Any:
        with around(self):
            return original(self, *args, **options)

    execute.indexnow_around = around  # type: ignore[attr-defined]
    BaseCommand.execute = execute  # type: ignore[method-assign]


def wagtail_site_request(root: Any) -> HttpRequest:
    """A request for which Wagtail knows only the site ``root`` (a ``SiteRootPath``).

    ``Page.get_url_parts(request)`` picks among the sites of the request's
    cached site root paths; given only this one, it builds the URL on this site.
    """
    from django.http import HttpRequest

    request = HttpRequest()
    roots: Sequence[Any] = [root]
    request._wagtail_cached_site_root_paths = roots  # type: ignore[attr-defined]
    return request


def admin_markup() -> dict[str, bool]:
    """How the installed Django's admin templates are built, for the app's pages to match.

    ``breadcrumbs_list``: breadcrumbs are ``<ol class="breadcrumbs">`` of ``<li>`` items
    (Django 6.1), not a ``<div class="breadcrumbs">`` of links between ``&rsaquo;``.
    ``tools_in_header``: ``admin/base.html`` puts the ``object-tools`` block beside the
    title (6.1), not at the top of a change list's content.
    """
    import django

    new = django.VERSION >= (6, 1)
    return {"breadcrumbs_list": new, "tools_in_header": new}


def parler_translations(model: type[Model]) -> list[tuple[str, tuple[str, ...]]]:
    """The translation relations of a django-parler model, each with its translated
    fields: ``[("translations", ("title", "slug"))]``; ``[]`` for any other model."""
    meta = getattr(model, "_parler_meta", None)
    if meta is None:
        return []
    return [(extension.rel_name, tuple(extension.get_translated_fields())) for extension in meta]
