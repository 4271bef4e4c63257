"""Django system checks for indexnow_django (ids ``indexnow.E…`` and ``indexnow.W…``).

The settings checks report :func:`indexnow_django.conf.validate`'s problems, so
``manage.py check`` and the runtime agree on what is valid.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from django.core import checks

from .conf import validate

__all__ = ["check_queue_wiring", "check_settings", "register_checks"]


def check_settings(
    app_configs: Sequence[Any] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """Every problem in ``settings.INDEXNOW`` as a ``checks.Error``."""
    return [checks.Error(p.msg, hint=p.hint, id=p.id) for p in validate()]


def _queue_dispatch() -> Any:
    """The settings when they are valid and dispatch resolves to the queue, else ``None``."""
    if validate():
        return None  # check_settings reports it
    from .conf import get_settings

    conf = get_settings(resolve_hosts=False)  # checks run before migrate: no query
    return conf if conf.enabled and conf.resolved_dispatch == "queue" else None


def check_queue_wiring(
    app_configs: Sequence[Any] | None = None, **kwargs: Any
) -> list[checks.CheckMessage]:
    """Queue dispatch needs workers that flush their jobs' URLs and a cache they share.

    ``indexnow.W001``: ``RQ["WORKER_CLASS"]`` does not run each job in a unit
    of work, so saves made by jobs are not submitted.
    ``indexnow.W002``: the debounce cache is local to each process (LocMem) or
    keeps nothing (Dummy), so workers cannot tell what another one sent.
    """
    conf = _queue_dispatch()
    if conf is None:
        return []
    from django.core.cache import caches
    from django.core.cache.backends.dummy import DummyCache
    from django.core.cache.backends.locmem import LocMemCache

    from .worker import WORKER_CLASS_LINE, configured_worker_class, is_wired

    messages: list[checks.CheckMessage] = []
    if not is_wired():
        path, cls = configured_worker_class()
        problem = "cannot be imported" if cls is None else "does not run each job in a unit of work"
        messages.append(
            checks.Warning(
                f"INDEXNOW dispatches to a queue but the rq worker class {path!r} {problem}: "
                "URLs that your jobs' saves produce are not submitted.",
                hint=f"Add {WORKER_CLASS_LINE} to your settings, or add "
                "indexnow_django.worker.UnitOfWorkMixin to your own worker class.",
                id="indexnow.W001",
            )
        )
    if conf.debounce_ttl > 0:
        cache = caches[conf.debounce_cache]
        if isinstance(cache, (LocMemCache, DummyCache)):
            kind = "keeps nothing" if isinstance(cache, DummyCache) else "is local to each process"
            messages.append(
                checks.Warning(
                    f"INDEXNOW['DEBOUNCE']['CACHE'] is {conf.debounce_cache!r} "
                    f"({type(cache).__name__}), which {kind}: workers cannot tell which URLs "
                    "another one has sent, so an engine may receive a URL again within "
                    "DEBOUNCE['TTL'].",
                    hint="Point DEBOUNCE['CACHE'] at a cache that workers share, such as "
                    "Django's RedisCache.",
                    id="indexnow.W002",
                )
            )
    return messages


def register_checks() -> None:
    from .scheduling import check_scheduling  # indexnow.W003

    checks.register(check_settings, "indexnow")
    checks.register(check_queue_wiring, "indexnow")
    checks.register(check_scheduling, "indexnow")
