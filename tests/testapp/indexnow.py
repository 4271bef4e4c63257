"""IndexNow registrations of the test models, discovered like an ``admin.py``."""

from __future__ import annotations

from typing import Any

from indexnow_django import ModelIndexNow, register
from tests.testapp.models import Document, Page, Post


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
