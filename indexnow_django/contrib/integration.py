"""What the CMS integrations (:mod:`.wagtail`, :mod:`.djangocms`) are each built of.

- :class:`IntegrationConfig`: the app's config. ``ready()`` checks that the apps
  it needs are installed, connects its ``handlers`` module and follows its
  sites' hosts (:class:`~indexnow_django.contrib.sites.SiteHostsWatch`);
  ``indexnow_hosts()`` gives those hosts.
- :class:`Receivers`: the handlers' signal receivers, connected and
  disconnected together.
- :class:`KeptBefores`: what a page was before the current transaction, kept until
  the commit compares it with what it became.
- :func:`guard`: a handler logs what goes wrong, and never raises into the CMS.
"""

from __future__ import annotations

import contextlib
import logging
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import TYPE_CHECKING, Any, Generic, TypeVar

from django.apps import AppConfig, apps
from django.core.exceptions import ImproperlyConfigured
from django.db import DatabaseError, connection
from django.dispatch import Signal

if TYPE_CHECKING:
    from .sites import SiteHostsWatch

__all__ = ["IntegrationConfig", "KeptBefores", "Receivers", "guard"]

#: ``(signal, handler, sender or None, name)``: one receiver of a handlers module.
Receiver = tuple[Signal, Callable[..., Any], type[Any] | None, str]

_Before = TypeVar("_Before")


class IntegrationConfig(AppConfig):
    """The app of a CMS integration, whose ``handlers`` module has ``connect()``
    (:meth:`connect_handlers`)."""

    #: The apps the integration needs in ``INSTALLED_APPS`` (before it).
    required_apps: tuple[str, ...] = ("indexnow_django",)
    #: The ``"app_label.Model"`` of the CMS's sites.
    site_model: str
    #: The sites' hosts, part of the settings (read again when they change).
    sites: SiteHostsWatch
    #: Logged (debug) when the sites cannot be read.
    sites_unreadable = "IndexNow could not read the sites yet"
    #: What the integration tracks with no registration, as ``indexnow_check`` lists it
    #: beside the registered models (the hook ``indexnow_tracked`` of an app config).
    indexnow_tracked: str

    def ready(self) -> None:
        for required in self.required_apps:
            if not apps.is_installed(required):
                raise ImproperlyConfigured(
                    f"{self.name} needs {required!r} in INSTALLED_APPS (before it)."
                )
        self.connect_handlers()
        self.sites.connect(apps.get_model(self.site_model))

    def connect_handlers(self) -> None:
        """Connect the integration's receivers (its ``handlers`` module's ``connect()``):
        each app imports its own, as its handlers import this module."""
        raise NotImplementedError

    def indexnow_hosts(self) -> list[str]:
        """The sites' hosts; none while the sites' table does not exist yet."""
        try:
            table = apps.get_model(self.site_model)._meta.db_table
            if table not in connection.introspection.table_names():
                return []
            return list(self.sites.read_hosts())
        except DatabaseError:
            logger = logging.getLogger(type(self).__module__)
            logger.debug(self.sites_unreadable, exc_info=True)
            return []


class Receivers:
    """The signal receivers that ``table()`` lists, each with a ``dispatch_uid`` under ``uid``."""

    def __init__(self, uid: str, table: Callable[[], Iterable[Receiver]]) -> None:
        self.uid = uid
        self.table = table

    def connect(self) -> None:
        """Connect the handlers (the app's ``ready()`` calls this)."""
        for receiver in self.table():
            self.connect_one(receiver)

    def connect_one(self, receiver: Receiver) -> None:
        """Connect one handler, as :meth:`connect` does (one the table lists later)."""
        signal, handler, sender, name = receiver
        signal.connect(handler, sender=sender, dispatch_uid=f"{self.uid}.{name}")

    def disconnect(self) -> None:
        """Disconnect the handlers."""
        for signal, _handler, sender, name in self.table():
            signal.disconnect(sender=sender, dispatch_uid=f"{self.uid}.{name}")


class KeptBefores(Generic[_Before]):
    """Pages changed in the current transaction of each connection, by key: their "before",
    and a weak reference to the commit callback that compares them. A rollback drops the
    callback (and CPython frees it), which makes the entry stale."""

    def __init__(self) -> None:
        self._entries: weakref.WeakKeyDictionary[
            Any, dict[Any, tuple[weakref.ref[Any], _Before]]
        ] = weakref.WeakKeyDictionary()

    def get(self, connection: Any, key: Any) -> _Before | None:
        """The "before" kept for ``key`` in the current transaction, if any."""
        entry = self._entries.get(connection, {}).get(key)
        if entry is None or entry[0]() is None:
            return None
        return entry[1]

    def expect(
        self, connection: Any, key: Any, before: _Before, compare: Callable[[], None]
    ) -> None:
        """Keep ``before`` for ``key``, and call ``compare()`` once the transaction commits."""
        entries = self._entries.setdefault(connection, {})

        def indexnow_compare_page() -> None:
            entries.pop(key, None)
            compare()

        entries[key] = (weakref.ref(indexnow_compare_page), before)
        connection.on_commit(indexnow_compare_page, robust=True)


@contextlib.contextmanager
def guard(logger: logging.Logger, what: str, pk: Any) -> Iterator[None]:
    """Log on ``logger``, never raise, what goes wrong (the CMS's action carries on)."""
    try:
        yield
    except Exception:
        logger.exception("IndexNow could not %s page=%s; its URLs are not submitted", what, pk)
