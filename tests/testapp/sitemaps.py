"""Sitemaps of the test project (``indexnow_submit --sitemap tests.testapp.sitemaps.sitemaps``)."""

from __future__ import annotations

from django.contrib.sitemaps import Sitemap
from django.db.models import QuerySet

from tests.testapp.models import Post


class PostSitemap(Sitemap):
    """Published posts, two per sitemap page so that paging is exercised."""

    limit = 2

    def items(self) -> QuerySet[Post]:
        return Post.objects.filter(status=Post.PUBLISHED).order_by("pk")


class StaticSitemap(Sitemap):
    def items(self) -> list[str]:
        return ["/about/", "/contact/"]

    def location(self, item: str) -> str:
        return item


sitemaps = {"posts": PostSitemap, "static": StaticSitemap()}


class DatedPostSitemap(Sitemap):
    """Published posts with their ``published_at`` as ``lastmod`` (``--changed-since``)."""

    def items(self) -> QuerySet[Post]:
        return Post.objects.filter(status=Post.PUBLISHED).order_by("pk")

    def lastmod(self, item: Post) -> object:
        return item.published_at


dated = {"posts": DatedPostSitemap}
