"""The django CMS integration's app: wiring, the sites' domains, and what ``indexnow_check`` shows.

Two hooks that the core app looks for on installed apps' configs:

- ``indexnow_hosts()``: the hosts URLs may be submitted for besides
  ``INDEXNOW["HOSTS"]`` (here: every ``django.contrib.sites`` ``Site``'s
  domain, each with its page tree), read again by every process every few
  seconds. A site saved or deleted in this process, a migration, and a fork
  (each rq job's work horse) make them be read again at once; a web process
  also compares the domains every 30 seconds
  (:class:`~indexnow_django.contrib.sites.SiteHostsWatch`).
A system check, ``indexnow.W040``, warns on a django CMS release before
:data:`SUPPORTED_CMS`: 4.1 and 5.0 keep a page's slug on its URL rows, changed
by the page settings form, not on the versions that are published, so the
integration cannot follow a slug change there.

- ``indexnow_diagnostics()``: findings for ``manage.py indexnow_check`` (here:
  the sites, their domains, and whether each is an allowed host).
- ``indexnow_explain(model, obj, now)``: ``manage.py indexnow_explain`` for a
  ``cms.Page`` (every language) or a ``cms.PageContent`` (its language).
- ``indexnow_model_urls(model, pks)``: ``manage.py indexnow_submit --model
  cms.Page`` (or ``cms.PageContent``, ``--pk``): the live URLs of the pages.
"""

from __future__ import annotations

import datetime
import re
from collections.abc import Iterator, Sequence
from typing import Any

from django.conf import settings
from django.core import checks

from .. import integration
from ..sites import SiteHostsWatch
from .pages import site_hosts

#: What the integration needs installed (before it).
REQUIRED_APPS = ("django.contrib.sites", "cms", "djangocms_versioning", "indexnow_django")

#: The oldest django CMS release whose publishing the integration follows.
SUPPORTED_CMS = (5, 1)


def cms_version() -> str:
    """The installed django CMS's version (``"5.1.3"``)."""
    from importlib.metadata import version

    return version("django-cms")


def check_cms_version(**kwargs: Any) -> list[checks.CheckMessage]:
    """``indexnow.W040``: a django CMS release the integration does not follow."""
    found = cms_version()
    numbers = tuple(int(part) for part in re.findall(r"\d+", found)[:2])
    if numbers >= SUPPORTED_CMS:
        return []
    oldest = ".".join(map(str, SUPPORTED_CMS))
    return [
        checks.Warning(
            f"indexnow_django.contrib.djangocms follows django CMS {oldest} and later; this "
            f"is django CMS {found}, which keeps slugs outside the versions it publishes: a "
            "slug change is not followed (the old URLs of a page and its descendants are not "
            "submitted).",
            hint=f"Upgrade django CMS to {oldest} or later (with djangocms-versioning 2.8).",
            obj="indexnow_django.contrib.djangocms",
            id="indexnow.W040",
        )
    ]


#: The sites' hosts are part of the settings: they are read again when they change.
SITES = SiteHostsWatch("indexnow_django.contrib.djangocms.apps", site_hosts)


class IndexNowDjangoCMSConfig(integration.IntegrationConfig):
    name = "indexnow_django.contrib.djangocms"
    label = "indexnow_djangocms"
    verbose_name = "IndexNow for django CMS"
    #: Where its hosts come from, as messages about a host name it.
    indexnow_hosts_origin = "a django.contrib.sites domain"

    required_apps = REQUIRED_APPS
    site_model = "sites.Site"
    sites = SITES
    indexnow_tracked = (
        "django CMS pages: every page in each language, through djangocms-versioning's "
        "publishing (indexnow_django.contrib.djangocms, no registration needed)"
    )

    def ready(self) -> None:
        super().ready()
        checks.register(check_cms_version, "indexnow", checks.Tags.compatibility)

    def connect_handlers(self) -> None:
        from . import handlers

        handlers.connect()

    def indexnow_diagnostics(self) -> Iterator[tuple[str, str, str, dict[str, Any]]]:
        """``(section, status, message, data)`` for ``indexnow_check``: the sites, their pages."""
        from cms.models import Page
        from django.contrib.sites.models import Site

        from ...conf import get_settings
        from ...protocol.normalize import InvalidURL, host_of, normalize_url

        allowed = get_settings().hosts
        sites = list(Site.objects.order_by("pk"))
        if not sites:
            yield ("sites", "WARN", "no Site: django CMS pages have no domain to be sent on", {})
            return
        for site in sites:
            try:
                host = host_of(normalize_url(f"https://{site.domain}/"))
            except InvalidURL:
                yield (
                    "sites",
                    "WARN",
                    f"{site.name or site.pk}: domain {site.domain!r} is not a host name "
                    "(its pages' URLs are dropped)",
                    {"site": site.pk},
                )
                continue
            pages = Page.objects.filter(site=site).count()
            status = "OK" if host in allowed else "WARN"
            note = "" if status == "OK" else " (not an allowed host: its URLs are dropped)"
            yield (
                "sites",
                status,
                f"{site.name or site.domain}: django CMS site {site.pk}, {pages} page(s), "
                f"host {host}{note}",
                {"site": site.pk, "host": host, "pages": pages},
            )

    def indexnow_explain(
        self, model: type[Any], obj: Any, now: datetime.datetime
    ) -> dict[str, Any] | None:
        """What ``indexnow_explain`` says of a page or a page's content; ``None`` for the rest."""
        from cms.models import Page, PageContent

        from .pages import describe

        if issubclass(model, PageContent):
            page, languages = obj.page, [obj.language]
        elif issubclass(model, Page):
            # Every language it has content in (a draft has no URL row yet).
            has = set(obj.urls.values_list("language", flat=True))
            has.update(
                PageContent.admin_manager.filter(page=obj).values_list("language", flat=True)
            )
            languages = [code for code, _name in settings.LANGUAGES if code in has]
            page = obj
        else:
            return None
        why, urls = describe(page, languages)
        return {
            "covered_by": {"kind": "djangocms", "name": "django CMS", "integration": self.name},
            "public": any(urls.values()),
            "why": why,
            "publish_at": None,
            "_scheduled_at": None,
            "_languages": urls,
        }

    def indexnow_model_urls(
        self, model: type[Any], pks: Sequence[str] | None
    ) -> Iterator[tuple[Any, str, str | None]] | None:
        """``(pk, URL, problem)`` for ``indexnow_submit --model`` of pages, or ``None``."""
        from cms.models import Page, PageContent

        if not issubclass(model, (Page, PageContent)):
            return None
        return _model_urls(model, pks)


def _model_urls(
    model: type[Any], pks: Sequence[str] | None
) -> Iterator[tuple[Any, str, str | None]]:
    from cms.models import PageContent
    from django.core.exceptions import ValidationError
    from djangocms_versioning.constants import PUBLISHED

    from .pages import PageURLs

    urls = PageURLs()
    contents = issubclass(model, PageContent)
    published: dict[tuple[Any, str], Any] = {}
    if contents:  # a page's URL in a language belongs to its published content
        for pk, page_id, language in PageContent.admin_manager.filter(
            versions__state=PUBLISHED
        ).values_list("pk", "page_id", "language"):
            published[(page_id, language)] = pk
    if pks is None:
        for page_id, language, url in urls.each():
            yield (published.get((page_id, language)) if contents else page_id), url, None
        return
    manager = PageContent.admin_manager if contents else model._default_manager
    for typed in pks:
        try:
            obj = manager.filter(pk=model._meta.pk.to_python(typed)).first()
        except ValidationError as exc:
            yield typed, "", f"not a primary key ({'; '.join(exc.messages)})"
            continue
        if obj is None:
            yield typed, "", "no such object"
            continue
        if contents and published.get((obj.page_id, obj.language)) != obj.pk:
            yield typed, "", "not public: not the published version of its page"
            continue
        page = obj.page if contents else obj
        live = urls.page(page, obj.language if contents else None)
        if not live:
            yield (
                typed,
                "",
                "not public in any language: no published version, an "
                "unpublished page above it, or login_required",
            )
            continue
        for url in live.values():
            yield typed, url, None
