"""What a Wagtail page's public URLs are: its full URLs on every site, none while private.

A page is *public* when it is live, its ``go_live_at`` (if any) has come, and
no view restriction (on itself or an ancestor) hides it. (Wagtail's admin
creates a page live and then makes it wait for a future ``go_live_at``: that
page is not public in between.) Its URLs are the ones Wagtail's own ``get_url_parts``
gives for each :class:`~wagtail.models.Site` whose root the page sits under
(a page shared by two sites has a URL on each host), normalized the way
delivery sends them, so a hand registration of a page model that returns
``page.full_url`` yields the same strings and the unit of work sends each once.

:class:`PageURLs` loads what it needs once (the sites' root paths, the
restricted page paths) and then answers for any number of pages without
another query, except the one that lists a subtree's live pages.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import TYPE_CHECKING, Any

from django.utils import timezone

from ...compat import wagtail_site_request
from ...protocol.normalize import InvalidURL, host_of, normalize_url

if TYPE_CHECKING:
    from wagtail.models import Page

# Wagtail's models are imported where they are used: this module imports (and
# its app's config loads) without Wagtail's apps being ready.

__all__ = ["PageURLs", "site_hosts"]


def _specific(page: Page) -> Page:
    """``page`` as its own page type (without a query), so that its ``get_url_parts`` counts."""
    specific_class = page.specific_class
    if specific_class is None or isinstance(page, specific_class):
        return page
    specific: Page = page.specific_deferred
    return specific


class PageURLs:
    """Public URLs of pages as the database on ``using`` has them now."""

    def __init__(self, using: str | None = None, *, ignore_restriction: Any = None) -> None:
        from wagtail.models import PageViewRestriction, Site

        self.using = using or "default"
        self.now = timezone.now()
        self.roots = list(Site.get_site_root_paths())
        restrictions = PageViewRestriction.objects.using(self.using).exclude(
            restriction_type=PageViewRestriction.NONE
        )
        if ignore_restriction is not None:
            restrictions = restrictions.exclude(pk=ignore_restriction)
        self.restricted = tuple(restrictions.values_list("page__path", flat=True))

    def is_private(self, page: Page) -> bool:
        """Whether a view restriction on ``page`` or one of its ancestors hides it."""
        return any(page.path.startswith(path) for path in self.restricted)

    def is_public(self, page: Page) -> bool:
        """Live, not waiting for its ``go_live_at``, and not private."""
        if not page.live or self.is_private(page):
            return False
        go_live_at = page.go_live_at
        return go_live_at is None or go_live_at <= self.now

    def urls(self, page: Page) -> list[str]:
        """The full URLs of ``page`` on every site it is routable on; none unless public."""
        if not self.is_public(page):
            return []
        specific = _specific(page)
        urls: dict[str, None] = {}
        for root in self.roots:
            if not page.url_path.startswith(root.root_path):
                continue
            # get_url_parts() picks one site among those the page is under; given
            # only this site's root path (its cache of them), it builds this one.
            parts = specific.get_url_parts(wagtail_site_request(root))
            if parts is None or parts[1] is None or parts[2] is None:
                continue
            try:
                urls[normalize_url(f"{parts[1]}{parts[2]}")] = None
            except InvalidURL:
                continue
        return list(urls)

    def descendants(self, page: Page) -> Iterator[Page]:
        """The live pages below ``page`` (in the tree as it is now), streamed."""
        from wagtail.models import Page

        pages = (
            Page.objects.using(self.using)
            .filter(path__startswith=page.path, depth__gt=page.depth, live=True)
            .order_by("path")
            .specific(defer=True)
        )
        iterator: Iterator[Page] = pages.iterator()
        return iterator

    def subtree_urls(self, page: Page, *, include_page: bool = True) -> list[str]:
        """The public URLs of ``page`` (unless ``include_page`` is false) and of its descendants."""
        urls: dict[str, None] = {}
        pages: Iterable[Page] = self.descendants(page)
        if include_page:
            urls.update(dict.fromkeys(self.urls(page)))
        for descendant in pages:
            urls.update(dict.fromkeys(self.urls(descendant)))
        return list(urls)


def site_hosts(using: str | None = None) -> list[str]:
    """The normalized hosts (``name[:port]``) of every Wagtail site, read from the database
    (not from Wagtail's cache of root paths, which a forked process may hold stale)."""
    from wagtail.models import Site

    hosts: dict[str, None] = {}
    sites = Site.objects.using(using or "default").only("hostname", "port")
    for site in sites.order_by("-is_default_site", "hostname", "port"):
        try:
            hosts[host_of(normalize_url(site.root_url))] = None
        except InvalidURL:
            continue
    return list(hosts)
