"""What a django CMS page's live URLs are: one per language it is published in.

django CMS keeps a routing table, ``PageUrl`` (one row per page and language),
whose ``path`` is what the page answers at: djangocms-versioning rewrites it
when a version is published or unpublished, and sets it to ``None`` for a page
(and the pages below it) that has nothing public. A page's URL in a language
is *live* when that row has a path, the page has a published
``PageContent`` in that language (a draft child of a published page gets a
path when its parent's path changes, but serves nothing), and the page is not
``login_required`` (engines would get the login page).

The URL is the ``pages-root`` or ``pages-details-by-slug`` route reversed in
that language (so ``i18n_patterns`` prefixes count), on the domain of the
page's ``Site``, with ``BASE_URL``'s scheme for ``BASE_URL``'s host and https
for the others, normalized the way delivery sends it.

:class:`PageURLs` reads the sites once, and then a page, a subtree or a set of
pages in one query each.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from django.db.models import Exists, OuterRef, Q
from django.urls import NoReverseMatch, reverse
from django.utils.translation import override

from ...protocol.normalize import InvalidURL, host_of, normalize_url

if TYPE_CHECKING:
    from cms.models import Page

# django CMS's models are imported where they are used: this module imports
# (and its app's config loads) without django CMS's apps being ready.

__all__ = ["LiveURLs", "PageURLs", "describe", "site_hosts"]

#: ``(page pk, language)`` → the page's live URL in that language.
LiveURLs = dict[tuple[Any, str], str]


def _scheme(host: str) -> str:
    from ...conf import get_settings

    try:
        entry = get_settings().hosts.get(host)
    except Exception:  # settings that cannot be built: the checks say why
        return "https"
    return entry.scheme if entry is not None else "https"


class PageURLs:
    """Live URLs of django CMS pages as the database on ``using`` has them now."""

    def __init__(self, using: str | None = None) -> None:
        from django.contrib.sites.models import Site

        self.using = using or "default"
        self.domains: dict[Any, str] = dict(
            Site.objects.using(self.using).values_list("pk", "domain")
        )
        self._schemes: dict[str, str] = {}

    def _rows(self, where: Q, language: str | None) -> Iterable[tuple[Any, str, str, Any, bool]]:
        from cms.models import PageContent, PageUrl
        from djangocms_versioning.constants import PUBLISHED

        published = PageContent.admin_manager.using(self.using).filter(
            page=OuterRef("page_id"), language=OuterRef("language"), versions__state=PUBLISHED
        )
        rows = PageUrl.objects.using(self.using).filter(
            where, path__isnull=False, page__login_required=False
        )
        if language is not None:
            rows = rows.filter(language=language)
        rows = rows.filter(Exists(published))
        found: Iterable[tuple[Any, str, str, Any, bool]] = rows.values_list(
            "page_id", "language", "path", "page__site_id", "page__is_home"
        ).order_by("page__path", "language")
        return found

    def url(self, language: str, path: str, site_id: Any, is_home: bool) -> str | None:
        """The full URL of a live path, or ``None`` when it cannot be built."""
        domain = self.domains.get(site_id)
        if not domain:
            return None
        try:
            with override(language):
                if is_home or not path:
                    location = reverse("pages-root")
                else:
                    location = reverse("pages-details-by-slug", kwargs={"slug": path})
        except NoReverseMatch:  # django CMS's URLs are not in the URLconf
            return None
        try:
            host = host_of(normalize_url(f"https://{domain}/"))
            if host not in self._schemes:
                self._schemes[host] = _scheme(host)
            return normalize_url(f"{self._schemes[host]}://{host}{location}")
        except InvalidURL:
            return None

    def each(
        self, where: Q | None = None, language: str | None = None
    ) -> Iterator[tuple[Any, str, str]]:
        """``(page pk, language, URL)`` of every live page (or those ``where`` picks), streamed."""
        rows = self._rows(where or Q(), language)
        if hasattr(rows, "iterator"):
            rows = rows.iterator(chunk_size=2000)
        for page_id, lang, path, site_id, is_home in rows:
            url = self.url(lang, path, site_id, is_home)
            if url is not None:
                yield page_id, lang, url

    def _live(self, where: Q, language: str | None) -> LiveURLs:
        return {(page_id, lang): url for page_id, lang, url in self.each(where, language)}

    def page(self, page: Page | Any, language: str | None = None) -> LiveURLs:
        """The live URLs of one page (``page`` or its primary key), in ``language`` or all."""
        return self._live(Q(page_id=getattr(page, "pk", page)), language)

    def subtree(self, page: Page, language: str | None = None) -> LiveURLs:
        """The live URLs of ``page`` and of every page below it, in ``language`` or all."""
        return self._live(Q(page__path__startswith=page.path), language)


def describe(page: Page, languages: Iterable[str]) -> tuple[list[str], dict[str, list[str]]]:
    """Why ``page`` is live or not in each of ``languages``, and its live URL in each."""
    from cms.models import PageContent
    from djangocms_versioning.constants import PUBLISHED

    live = PageURLs().page(page)
    paths = dict(page.urls.values_list("language", "path"))
    published = set(
        PageContent.admin_manager.filter(page=page, versions__state=PUBLISHED).values_list(
            "language", flat=True
        )
    )
    why: list[str] = []
    urls: dict[str, list[str]] = {}
    if page.login_required:
        why.append("login_required: engines would get the login page, so it is never submitted")
    for language in languages:
        url = live.get((page.pk, language))
        urls[language] = [url] if url else []
        if url:
            why.append(f"{language}: a published version, live at {url}")
        elif language not in published:
            why.append(f"{language}: no published version (a draft, or unpublished): not public")
        elif paths.get(language) is None:
            why.append(f"{language}: published, but a page above it is not: it has no URL")
        elif not page.login_required:
            why.append(f"{language}: published, but its site has no domain: it has no URL")
    return why, urls


def site_hosts(using: str | None = None) -> list[str]:
    """The normalized hosts (``name[:port]``) of every ``Site``'s domain, read from the database."""
    from django.contrib.sites.models import Site

    hosts: dict[str, None] = {}
    for domain in (
        Site.objects.using(using or "default").order_by("pk").values_list("domain", flat=True)
    ):
        try:
            hosts[host_of(normalize_url(f"https://{domain}/"))] = None
        except InvalidURL:
            continue
    return list(hosts)
