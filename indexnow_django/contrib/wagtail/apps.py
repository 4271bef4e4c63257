"""The Wagtail integration's app: wiring, the sites' hosts, and what ``indexnow_check`` shows.

Two hooks that the core app looks for on installed apps' configs:

- ``indexnow_hosts()``: the hosts URLs may be submitted for besides
  ``INDEXNOW["HOSTS"]`` (here: every Wagtail ``Site``'s host), read again by
  every process every few seconds (``conf.HOSTS_REFRESH_SECONDS``). A site
  saved or deleted in this process, a migration, and a fork (each rq job's
  work horse) make them be read again at once; a web process also compares
  the sites' hosts every :data:`SITES_RECHECK_SECONDS`.
- ``indexnow_diagnostics()``: findings for ``manage.py indexnow_check`` (here:
  the sites, their hosts, and whether each is an allowed host).
"""

from __future__ import annotations

import logging
import os
import time
from collections.abc import Iterator
from typing import Any

from django.apps import AppConfig, apps
from django.core.exceptions import ImproperlyConfigured
from django.core.signals import request_started
from django.db import DatabaseError, connection
from django.db.models.signals import post_delete, post_migrate, post_save

logger = logging.getLogger(__name__)

_UID = "indexnow_django.contrib.wagtail.apps"


def _forget_settings(**kwargs: Any) -> None:
    from ...conf import clear_cache

    clear_cache()


#: Seconds between two looks, per process, at whether the sites' hosts changed.
SITES_RECHECK_SECONDS = 30.0

_sites_seen: tuple[float, tuple[str, ...] | None] = (-SITES_RECHECK_SECONDS, None)


def _notice_site_changes(**kwargs: Any) -> None:
    """``request_started``: every 30 s at most, compare the sites' hosts with the last look.

    A site saved by another process sends no signal here; the settings are built
    again when the hosts differ.
    """
    global _sites_seen
    checked_at, seen = _sites_seen
    now = time.monotonic()
    if now - checked_at < SITES_RECHECK_SECONDS:
        return
    try:
        from .pages import site_hosts

        hosts = tuple(site_hosts())
    except DatabaseError:
        return
    _sites_seen = (now, hosts)
    if hosts != seen:
        _forget_settings()


class IndexNowWagtailConfig(AppConfig):
    name = "indexnow_django.contrib.wagtail"
    label = "indexnow_wagtail"
    verbose_name = "IndexNow for Wagtail"

    def ready(self) -> None:
        for required in ("wagtail", "indexnow_django"):
            if not apps.is_installed(required):
                raise ImproperlyConfigured(
                    f"indexnow_django.contrib.wagtail needs {required!r} in INSTALLED_APPS "
                    "(before it)."
                )
        from wagtail.models import Site

        from . import handlers

        handlers.connect()
        # The sites' hosts are part of the settings: read them again when they change.
        post_save.connect(_forget_settings, sender=Site, dispatch_uid=f"{_UID}.site_saved")
        post_delete.connect(_forget_settings, sender=Site, dispatch_uid=f"{_UID}.site_deleted")
        post_migrate.connect(_forget_settings, dispatch_uid=f"{_UID}.migrated")
        request_started.connect(_notice_site_changes, dispatch_uid=f"{_UID}.request_started")
        if hasattr(os, "register_at_fork"):
            os.register_at_fork(after_in_child=_forget_settings)

    def indexnow_hosts(self) -> list[str]:
        """Every Wagtail site's host; none while the sites' table does not exist yet."""
        from wagtail.models import Site

        try:
            if Site._meta.db_table not in connection.introspection.table_names():
                return []
            from .pages import site_hosts

            return site_hosts()
        except DatabaseError:
            logger.debug("IndexNow could not read the Wagtail sites yet", exc_info=True)
            return []

    def indexnow_report_urls(self) -> Iterator[tuple[str, str]]:
        """``("Wagtail pages", url)`` for each public page's URLs, for ``indexnow_report``."""
        from wagtail.models import Page

        from .pages import PageURLs

        urls = PageURLs()
        pages = Page.objects.filter(live=True, depth__gt=1).order_by("path").specific(defer=True)
        for page in pages.iterator():
            for url in urls.urls(page):
                yield "Wagtail pages", url

    def indexnow_diagnostics(self) -> Iterator[tuple[str, str, str, dict[str, Any]]]:
        """``(section, status, message, data)`` for ``indexnow_check``: the Wagtail sites."""
        from wagtail.models import Site

        from ...conf import get_settings
        from ...protocol.normalize import host_of, normalize_url

        allowed = get_settings().hosts
        sites = list(Site.objects.select_related("root_page").order_by("hostname", "port"))
        if not sites:
            yield (
                "sites",
                "WARN",
                "no Wagtail site: pages are routable nowhere, so nothing is submitted",
                {},
            )
            return
        for site in sites:
            host = host_of(normalize_url(site.root_url))
            status = "OK" if host in allowed else "WARN"
            note = "" if status == "OK" else " (not an allowed host: its URLs are dropped)"
            yield (
                "sites",
                status,
                f"{site.site_name or site.hostname}: {site.root_url}/ root page "
                f"{site.root_page.url_path!r}{' (default)' if site.is_default_site else ''}, "
                f"host {host}{note}",
                {"site": site.pk, "host": host, "root_url": site.root_url},
            )
