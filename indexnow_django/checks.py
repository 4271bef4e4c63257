"""Django system checks for indexnow_django (ids ``indexnow.E…`` and ``indexnow.W…``).

The settings checks report :func:`indexnow_django.conf.validate`'s problems, so
``manage.py check`` and the runtime agree on what is valid. The wiring checks
look at what surrounds the settings (the middleware, the debounce cache; each
transport adds its own: its app, its worker) once the settings are valid. ``manage.py
indexnow_check`` reports these same findings and adds what needs the network.

No check reads the database: ``migrate`` runs them before it creates any table.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.core import checks

from .conf import IndexNowSettings, get_settings, validate
from .ops.findings import StopsDelivery
from .transports import chosen

__all__ = [
    "MIDDLEWARE_PATH",
    "StopsDelivery",
    "check_debounce_cache",
    "check_key_file_url",
    "check_queue_wiring",
    "check_settings",
    "check_transport",
    "check_wiring",
    "middleware_without_app",
    "register_checks",
]

#: The middleware that makes each request one unit of work.
MIDDLEWARE_PATH = "indexnow_django.middleware.IndexNowMiddleware"


def check_settings(
    app_configs: Sequence[Any] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """Every problem in ``settings.INDEXNOW`` as a ``checks.Error``."""
    return [checks.Error(p.msg, hint=p.hint, id=p.id) for p in validate()]


def _valid_settings() -> IndexNowSettings | None:
    """The settings when they are valid and enabled (else ``check_settings`` speaks)."""
    if validate():
        return None
    conf = get_settings(resolve_hosts=False)  # checks run before migrate: no query
    return conf if conf.enabled else None


def check_transport(
    app_configs: Sequence[Any] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """The chosen transport's own checks (:meth:`~indexnow_django.transports.Transport.checks`)."""
    conf = _valid_settings()
    return [] if conf is None else chosen(conf).checks()


def check_queue_wiring(
    app_configs: Sequence[Any] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """``indexnow.W002``: deliveries run in workers, but the debounce cache is local to each
    process (LocMem), or keeps nothing (Dummy): no delivery sees what an earlier one sent.
    """
    conf = _valid_settings()
    if conf is None or conf.debounce_ttl == 0:
        return []
    transport = chosen(conf)
    if transport.in_process:
        return []
    from django.core.cache import caches
    from django.core.cache.backends.dummy import DummyCache
    from django.core.cache.backends.locmem import LocMemCache

    cache = caches[conf.debounce_cache]
    if not isinstance(cache, (LocMemCache, DummyCache)):
        return []
    effect = "nothing is debounced, even with a single worker"
    hint = "Point DEBOUNCE['CACHE'] at a cache that workers share, such as Django's RedisCache."
    if isinstance(cache, DummyCache):
        kind = "keeps nothing"
    else:
        kind, worse, better = transport.local_cache_note()
        effect, hint = worse or effect, better or hint
    if effect.startswith("nothing"):
        effect += ", so an engine receives a URL again at every save"
    return [
        checks.Warning(
            f"INDEXNOW['DEBOUNCE']['CACHE'] is {conf.debounce_cache!r} "
            f"({type(cache).__name__}), which {kind}: {effect}.",
            hint=hint,
            id="indexnow.W002",
        )
    ]


def check_crawl_worker(
    app_configs: Sequence[Any] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """``indexnow.W050``: crawl receipts on, but nothing records them (see
    :mod:`indexnow_django.crawl.checks`)."""
    from .crawl.checks import crawl_worker_checks

    conf = _valid_settings()
    return [] if conf is None else crawl_worker_checks(conf)


def _has_middleware() -> bool:
    """``MIDDLEWARE`` holds :data:`MIDDLEWARE_PATH` or a subclass of it."""
    from django.conf import settings
    from django.utils.module_loading import import_string

    for entry in getattr(settings, "MIDDLEWARE", None) or []:
        if entry == MIDDLEWARE_PATH:
            return True
        try:
            found = import_string(entry)
        except ImportError:
            continue  # Django reports it when it loads the middleware
        bases = getattr(found, "__mro__", ())
        if any(f"{base.__module__}.{base.__qualname__}" == MIDDLEWARE_PATH for base in bases):
            return True
    return False


def middleware_without_app() -> str | None:
    """What is wrong when the middleware runs but the app is not installed, if it is not.

    No system check can say it: an app's checks are registered by the app. The
    middleware logs it when Django loads it.
    """
    from django.apps import apps

    if apps.is_installed("indexnow_django"):
        return None
    return (
        f"{MIDDLEWARE_PATH} is in MIDDLEWARE but indexnow_django is not in INSTALLED_APPS: "
        "no model is tracked and nothing is submitted. Add 'indexnow_django' to "
        "INSTALLED_APPS (after 'django_rq')."
    )


def check_wiring(
    app_configs: Sequence[Any] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """What the app needs around it.

    ``indexnow.W004``: the app is installed without its middleware, so each
    transaction (each save outside one) is flushed on its own instead of a
    request being flushed once.
    ``indexnow.W005``: dispatch goes to a queue but ``django_rq`` is not in
    ``INSTALLED_APPS``, so ``manage.py rqworker`` does not exist.
    """
    conf = _valid_settings()
    if conf is None:
        return []

    messages: list[checks.CheckMessage] = []
    if not _has_middleware():
        messages.append(
            checks.Warning(
                f"{MIDDLEWARE_PATH} is not in MIDDLEWARE: the URLs of a request are flushed "
                "once per transaction (or per save outside one) instead of once per request.",
                hint=f"Add {MIDDLEWARE_PATH!r} to MIDDLEWARE.",
                id="indexnow.W004",
            )
        )
    return messages


def check_debounce_cache(
    app_configs: Sequence[Any] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """``indexnow.W006``: debouncing is on but its cache is a DummyCache, which keeps nothing.

    With queue dispatch ``indexnow.W002`` says so already.
    """
    conf = _valid_settings()
    if conf is None or conf.debounce_ttl == 0 or not chosen(conf).in_process:
        return []
    from django.core.cache import caches
    from django.core.cache.backends.dummy import DummyCache

    if not isinstance(caches[conf.debounce_cache], DummyCache):
        return []
    return [
        checks.Warning(
            f"INDEXNOW['DEBOUNCE']['CACHE'] is {conf.debounce_cache!r} (DummyCache), which "
            "stores nothing, so nothing is debounced: an engine receives a URL again at "
            "every save.",
            hint="Point DEBOUNCE['CACHE'] at a real cache, or set DEBOUNCE['TTL'] to 0.",
            id="indexnow.W006",
        )
    ]


def _key_file_keys(conf: IndexNowSettings) -> list[str]:
    """The keys whose file the site serves itself, at ``/<KEY>.txt``, without reading the
    hosts that installed apps add (that may query the database)."""
    keys = [conf.key] if conf.key_location is None else []
    raw_hosts = conf.hosts_setting
    if isinstance(raw_hosts, Mapping):
        for options in raw_hosts.values():
            options = options or {}
            if options.get("KEY") and not options.get("KEY_LOCATION"):
                keys.append(options["KEY"])
    return list(dict.fromkeys(keys))


def check_key_file_url(
    app_configs: Sequence[Any] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """``indexnow.W007``: ``/<KEY>.txt`` does not reach the key file view in ``ROOT_URLCONF``
    (``include("indexnow_django.urls")`` is missing, or a pattern before it answers)."""
    conf = _valid_settings()
    if conf is None:
        return []
    from django.urls import Resolver404, resolve

    from .protocol.masking import mask_key
    from .views import key_file

    messages: list[checks.CheckMessage] = []
    for key in _key_file_keys(conf):
        path = f"/{mask_key(key)}.txt"
        try:
            match = resolve(f"/{key}.txt")
        except Resolver404:
            found = "no URL pattern matches it"
        except Exception:
            return []  # a URLconf that cannot be loaded: Django's own checks say why
        else:
            if match.func is key_file:
                continue
            found = f"it is answered by {match._func_path}"
        messages.append(
            checks.Warning(
                f"The key file URL {path} does not reach indexnow_django's key file view: "
                f"{found}, so engines cannot verify the key and reject every submission.",
                hint='Add path("", include("indexnow_django.urls")) to your ROOT_URLCONF, '
                "before any catch-all pattern (outside i18n_patterns); or serve the file "
                "yourself and set KEY_LOCATION.",
                id="indexnow.W007",
            )
        )
    return messages


def register_checks() -> None:
    from .registration.registry import (
        check_languages,  # indexnow.E030
        check_registrations,  # indexnow.E031, indexnow.W031
    )
    from .units.scheduling import check_scheduling  # indexnow.W003

    checks.register(check_settings, "indexnow")
    checks.register(check_wiring, "indexnow")
    checks.register(check_transport, "indexnow")
    checks.register(check_queue_wiring, "indexnow")
    checks.register(check_debounce_cache, "indexnow")
    checks.register(check_key_file_url, "indexnow", checks.Tags.urls)
    checks.register(check_scheduling, "indexnow")
    checks.register(check_crawl_worker, "indexnow")
    checks.register(check_languages, "indexnow")
    checks.register(check_registrations, "indexnow", checks.Tags.models)
