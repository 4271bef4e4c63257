"""The Wagtail integration's app: wiring, the sites' hosts, and what ``indexnow_check`` shows.

Two hooks that the core app looks for on installed apps' configs:

- ``indexnow_hosts()``: the hosts URLs may be submitted for besides
  ``INDEXNOW["HOSTS"]`` (here: every Wagtail ``Site``'s host), read again by
  every process every few seconds (``conf.HOSTS_REFRESH_SECONDS``). A site
  saved or deleted in this process, a migration, and a fork (each rq job's
  work horse) make them be read again at once; a web process also compares
  the sites' hosts every :attr:`~indexnow_django.contrib.sites.SiteHostsWatch.recheck_seconds`.
- ``indexnow_diagnostics()``: findings for ``manage.py indexnow_check`` (here:
  the sites, their hosts, and whether each is an allowed host).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from .. import integration
from ..sites import SiteHostsWatch
from .pages import site_hosts

#: The sites' hosts are part of the settings: they are read again when they change.
SITES = SiteHostsWatch("indexnow_django.contrib.wagtail.apps", site_hosts)


class IndexNowWagtailConfig(integration.IntegrationConfig):
    name = "indexnow_django.contrib.wagtail"
    label = "indexnow_wagtail"
    verbose_name = "IndexNow for Wagtail"
    #: Where its hosts come from, as messages about a host name it.
    indexnow_hosts_origin = "a Wagtail Site"

    required_apps = ("wagtail", "indexnow_django")
    site_model = "wagtailcore.Site"
    sites = SITES
    sites_unreadable = "IndexNow could not read the Wagtail sites yet"
    indexnow_tracked = (
        "Wagtail pages: every page type, through Wagtail's publishing events "
        "(indexnow_django.contrib.wagtail, no registration needed)"
    )

    def connect_handlers(self) -> None:
        from . import handlers

        handlers.connect()

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
