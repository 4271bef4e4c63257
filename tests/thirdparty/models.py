"""Models built on the apps Django sites are made of (django-parler, django-taggit,
django-treebeard, django-mptt, django-reversion, django-polymorphic), one whose
``__init__`` sets what ``urls()`` reads, one with a generic relation, one upserted
and one that saves twice."""

from __future__ import annotations

from typing import Any

from django.contrib.contenttypes.fields import GenericForeignKey, GenericRelation
from django.contrib.contenttypes.models import ContentType
from django.db import models
from django.utils.text import slugify
from mptt.models import MPTTModel, TreeForeignKey
from parler.models import TranslatableModel, TranslatedFields
from polymorphic.models import PolymorphicModel
from taggit.managers import TaggableManager
from treebeard.mp_tree import MP_Node

from indexnow_django import IndexNowQuerySet


class Lesson(models.Model):
    """Its ``__init__`` sets an attribute that its URL reads (as parler's models do)."""

    slug = models.SlugField()

    #: Bulk changes submit too (django-import-export's use_bulk).
    objects = IndexNowQuerySet.as_manager()

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        self.section = "lessons"

    def __str__(self) -> str:
        return str(self.slug)

    def get_absolute_url(self) -> str:
        return f"/{self.section}/{self.slug}/"


class Step(models.Model):
    """A row shown on its lesson's page (an inline of the lesson in the admin)."""

    lesson = models.ForeignKey(Lesson, related_name="steps", on_delete=models.CASCADE)
    text = models.CharField(max_length=100)

    def __str__(self) -> str:
        return str(self.text)


class Note(models.Model):
    """Tagged with django-taggit; its page lists its tags, each with a page of its own."""

    slug = models.SlugField()
    tags = TaggableManager(blank=True)

    def __str__(self) -> str:
        return str(self.slug)

    def get_absolute_url(self) -> str:
        return f"/notes/{self.slug}/"


class Guide(TranslatableModel):
    """Translated with django-parler: its title and slug live in its translation rows."""

    status = models.CharField(max_length=20, default="published")
    translations = TranslatedFields(
        title=models.CharField(max_length=100),
        slug=models.SlugField(),
    )

    def __str__(self) -> str:
        return str(self.safe_translation_getter("title", any_language=True))


class Section(MP_Node):
    """A django-treebeard tree whose URLs are the path of slugs from the root."""

    slug = models.SlugField()

    def __str__(self) -> str:
        return str(self.slug)

    def get_absolute_url(self) -> str:
        return "/sections/" + "".join(f"{node.slug}/" for node in [*self.get_ancestors(), self])


class Topic(MPTTModel):
    """The same with django-mptt."""

    slug = models.SlugField()
    parent = TreeForeignKey(
        "self", null=True, blank=True, related_name="children", on_delete=models.CASCADE
    )

    def __str__(self) -> str:
        return str(self.slug)

    def get_absolute_url(self) -> str:
        path = "".join(f"{node.slug}/" for node in self.get_ancestors(include_self=True))
        return f"/topics/{path}"


class Story(models.Model):
    """Versioned with django-reversion (registered in the app's admin)."""

    title = models.CharField(max_length=100)
    slug = models.SlugField()

    def __str__(self) -> str:
        return str(self.title)

    def get_absolute_url(self) -> str:
        return f"/stories/{self.slug}/"


class Comment(models.Model):
    """A comment on any object, shown on its page (a generic foreign key)."""

    content_type = models.ForeignKey(ContentType, on_delete=models.CASCADE)
    object_id = models.PositiveBigIntegerField()
    target = GenericForeignKey("content_type", "object_id")
    text = models.CharField(max_length=100)

    def __str__(self) -> str:
        return str(self.text)


class Article(models.Model):
    """Its page shows its comments: a generic relation named in ``related``."""

    slug = models.SlugField()
    comments = GenericRelation(Comment)

    def __str__(self) -> str:
        return str(self.slug)

    def get_absolute_url(self) -> str:
        return f"/articles/{self.slug}/"


class Product(PolymorphicModel):
    """django-polymorphic: a product's page, and a book's page of its own."""

    slug = models.SlugField()

    def __str__(self) -> str:
        return str(self.slug)

    def get_absolute_url(self) -> str:
        return f"/products/{self.slug}/"


class Book(Product):
    author = models.CharField(max_length=100, blank=True)

    def get_absolute_url(self) -> str:
        return f"/books/{self.slug}/"


class Entry(models.Model):
    """Upserted by its code (``bulk_create(update_conflicts=True)``)."""

    code = models.CharField(max_length=20, unique=True)
    slug = models.SlugField()

    objects = IndexNowQuerySet.as_manager()

    def __str__(self) -> str:
        return str(self.code)

    def get_absolute_url(self) -> str:
        return f"/entries/{self.slug}/"


class Event(models.Model):
    """Saved twice on creation: once for its primary key, once with the slug made from it."""

    title = models.CharField(max_length=100)
    slug = models.SlugField(blank=True)

    def __str__(self) -> str:
        return str(self.title)

    def save(self, *args: Any, **kwargs: Any) -> None:
        super().save(*args, **kwargs)
        if not self.slug:
            self.slug = f"{slugify(self.title)}-{self.pk}"
            super().save(update_fields=["slug"])

    def get_absolute_url(self) -> str:
        return f"/events/{self.slug}/"
