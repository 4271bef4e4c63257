"""IndexNow registrations of the test models, discovered like an ``admin.py``."""

from __future__ import annotations

from typing import Any

from indexnow_django import ModelIndexNow, register
from tests.testapp.models import Article, Document, Item, Page, Post, Restaurant, Story


@register(Post)
class PostIndexNow(ModelIndexNow):
    fields = ["title", "slug", "body", "status", "published_at", "category", "tags"]
    publish_at = "published_at"

    def is_published(self, obj: Any) -> bool:
        return bool(obj.status == Post.PUBLISHED)


register(Page)


@register(Document)
class DocumentIndexNow(ModelIndexNow):
    fields = ["data"]


@register(Restaurant)
class RestaurantIndexNow(ModelIndexNow):
    """Registered on the child only: saves through ``Place`` are found by their child row,
    and so are changes of ``Place.tags`` made from a tag."""

    fields = ["slug", "name", "tags"]


@register(Article)
class ArticleIndexNow(ModelIndexNow):
    """One URL per site it is on (as flat pages have); ``hidden`` is not in ``fields``."""

    fields = ["url", "title", "sites"]

    def is_published(self, obj: Any) -> bool:
        return not obj.hidden

    def urls(self, obj: Any) -> list[str]:
        return [f"/{site.name}{obj.url}" for site in obj.sites.order_by("name")]


@register(Item)
class ItemIndexNow(ModelIndexNow):
    """``stock`` is not in ``fields``."""

    fields = ["slug", "status"]

    def is_published(self, obj: Any) -> bool:
        return bool(obj.status == "published")


@register(Story)
class StoryIndexNow(ModelIndexNow):
    """Its URLs need a query (its tags), as many sites' do."""

    def urls(self, obj: Any) -> list[str]:
        return [f"/stories/{obj.slug}/", *(f"/tags/{tag.name}/" for tag in obj.tags.all())]
