"""IndexNow registrations of the third-party apps' models, as docs/third-party.md shows."""

from __future__ import annotations

from typing import Any

from taggit.models import Tag

from indexnow_django import ModelIndexNow, register
from tests.thirdparty.models import Lesson, Note

register(Lesson)


@register(Note)
class NoteIndexNow(ModelIndexNow):
    fields = ["slug", "tags"]

    def urls(self, obj: Any) -> list[str]:
        return [
            obj.get_absolute_url(),
            *(f"/tags/{tag.slug}/" for tag in obj.tags.order_by("name")),
        ]


@register(Tag)
class TagIndexNow(ModelIndexNow):
    """taggit's own model: its page, renamed with the tag."""

    def urls(self, obj: Any) -> list[str]:
        return [f"/tags/{obj.slug}/"]
