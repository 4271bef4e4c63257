"""Which blog pages IndexNow hears about. Discovered automatically, like admin.py."""

from __future__ import annotations

from typing import Any

from indexnow_django import ModelIndexNow, register

from .models import Page, Post


@register(Post)
class PostIndexNow(ModelIndexNow):
    # Saves that change none of these (a view counter, say) submit nothing.
    fields = ["title", "slug", "body", "status", "published_at", "category"]
    # A post saved as published with a future date is submitted at that moment.
    publish_at = "published_at"

    def is_published(self, obj: Any) -> bool:
        return bool(obj.status == Post.Status.PUBLISHED)

    def urls(self, obj: Any) -> list[str]:
        # The post, and its category's listing, which shows the post's title.
        urls = [obj.get_absolute_url()]
        if obj.category_id is not None:
            urls.append(obj.category.get_absolute_url())
        return urls


# Every default: each save of a page submits its URL.
register(Page)
