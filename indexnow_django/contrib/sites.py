"""The hosts of a CMS's ``Site`` records, kept in step with the settings in every process.

The integrations (:mod:`.wagtail`, :mod:`.djangocms`) give their sites' hosts through
``indexnow_hosts()``; the settings are built again (:func:`indexnow_django.conf.clear_cache`)
when a site is saved or deleted in this process, after a migration, in a forked child
(each rq job's work horse), and, for sites changed by another process, when a web
process sees the hosts differ at a request, every :attr:`SiteHostsWatch.recheck_seconds`
at most.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterable
from typing import Any

from django.core.signals import request_started
from django.db import DatabaseError
from django.db.models.signals import post_delete, post_migrate, post_save

__all__ = ["SiteHostsWatch"]


class SiteHostsWatch:
    """Builds the settings again when the hosts that ``read_hosts()`` gives change."""

    #: Seconds between two looks, per process, at whether the sites' hosts changed.
    recheck_seconds = 30.0

    def __init__(self, uid: str, read_hosts: Callable[[], Iterable[str]]) -> None:
        self.uid = uid
        self.read_hosts = read_hosts
        self._seen: tuple[float, tuple[str, ...] | None] = (float("-inf"), None)

    @staticmethod
    def forget(**kwargs: Any) -> None:
        from ..conf import clear_cache

        clear_cache()

    def notice(self, **kwargs: Any) -> None:
        """``request_started``: compare the sites' hosts with the last look (a site saved by
        another process sends no signal here)."""
        checked_at, seen = self._seen
        now = time.monotonic()
        if now - checked_at < self.recheck_seconds:
            return
        try:
            hosts = tuple(self.read_hosts())
        except DatabaseError:
            return
        self._seen = (now, hosts)
        if hosts != seen:
            self.forget()

    def connect(self, site_model: type[Any]) -> None:
        """Connect to the signals that may change the hosts (see the module)."""
        uid = self.uid
        post_save.connect(self.forget, sender=site_model, dispatch_uid=f"{uid}.site_saved")
        post_delete.connect(self.forget, sender=site_model, dispatch_uid=f"{uid}.site_deleted")
        post_migrate.connect(self.forget, dispatch_uid=f"{uid}.migrated")
        request_started.connect(self.notice, dispatch_uid=f"{uid}.request_started")
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=self.forget)
