"""IndexNow registrations of the third-party apps' models, as docs/third-party.md shows."""

from __future__ import annotations

from typing import Any

from taggit.models import Tag

from indexnow_django import ModelIndexNow, register
from tests.thirdparty.models import (
    Article,
    Book,
    Entry,
    Event,
    Guide,
    Lesson,
    Note,
    Product,
    Section,
    Story,
    Topic,
)


@register(Lesson)
class LessonIndexNow(ModelIndexNow):
    """Its steps are shown on its page: a step saved or deleted submits the lesson."""

    related = ["steps"]


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


@register(Guide)
class GuideIndexNow(ModelIndexNow):
    """django-parler: its translations need no line of their own."""

    fields = ["status", "title", "slug"]

    def is_published(self, obj: Any) -> bool:
        return bool(obj.status == "published")

    def urls(self, obj: Any) -> list[str]:
        return [
            f"/{code}/guides/{obj.safe_translation_getter('slug', language_code=code)}/"
            for code in sorted(obj.get_available_languages())
        ]


@register(Section)
class SectionIndexNow(ModelIndexNow):
    """A node's descendants' URLs follow from its slug."""

    def dependents(self, obj: Any) -> Any:
        return obj.get_descendants()


@register(Topic)
class TopicIndexNow(ModelIndexNow):
    def dependents(self, obj: Any) -> Any:
        return obj.get_descendants()


# django-reversion: a revert is a change like a save.
register(Story)


@register(Article)
class ArticleIndexNow(ModelIndexNow):
    """Its comments (a generic relation) are shown on its page."""

    related = ["comments"]


# django-polymorphic: a book is judged as a book, wherever it is saved or deleted from.
register(Product)
register(Book)

register(Entry)
register(Event)
