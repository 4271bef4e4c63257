from __future__ import annotations

from typing import Any

from django.db import models

from indexnow_django import IndexNowQuerySet


class Category(models.Model):
    name = models.CharField(max_length=100)
    slug = models.SlugField(unique=True)

    def __str__(self) -> str:
        return str(self.name)

    def get_absolute_url(self) -> str:
        return f"/category/{self.slug}/"


class Tag(models.Model):
    name = models.CharField(max_length=50)

    def __str__(self) -> str:
        return str(self.name)


class Post(models.Model):
    DRAFT = "draft"
    PUBLISHED = "published"

    title = models.CharField(max_length=200)
    slug = models.SlugField()
    body = models.TextField(blank=True)
    status = models.CharField(max_length=20, default=DRAFT)
    published_at = models.DateTimeField(null=True, blank=True)
    views = models.PositiveIntegerField(default=0)
    category = models.ForeignKey(Category, null=True, blank=True, on_delete=models.SET_NULL)
    tags = models.ManyToManyField(Tag, blank=True)

    def __str__(self) -> str:
        return str(self.title)

    def get_absolute_url(self) -> str:
        return f"/posts/{self.slug}/"


class Page(models.Model):
    """A model with every default: each save of it is submitted."""

    path = models.CharField(max_length=200)

    def __str__(self) -> str:
        return str(self.path)

    def get_absolute_url(self) -> str:
        return self.path


class Untracked(models.Model):
    """Never registered: the baseline for benchmarks."""

    title = models.CharField(max_length=200)
    slug = models.SlugField()

    def __str__(self) -> str:
        return str(self.title)


class Document(models.Model):
    """Tracked only when ``data`` changes, even in place (a JSON value)."""

    name = models.CharField(max_length=100)
    data = models.JSONField(default=dict, blank=True)

    def __str__(self) -> str:
        return str(self.name)

    def get_absolute_url(self) -> str:
        return f"/documents/{self.name}/"


class FeaturedPost(Post):
    """A multi-table child of a registered model: tracked with ``Post``'s registration."""

    badge = models.CharField(max_length=50, blank=True)


class PostProxy(Post):
    """A proxy of a registered model: tracked with ``Post``'s registration."""

    class Meta:
        proxy = True


class PostLoadedItsOwnWay(Post):
    """A model whose own ``from_db()`` builds its objects itself, as Django's docs show."""

    class Meta:
        proxy = True

    @classmethod
    def from_db(cls, db: Any, field_names: Any, values: Any, **kwargs: Any) -> Any:
        if len(values) != len(cls._meta.concrete_fields):
            given = dict(zip(field_names, values, strict=True))
            values = [given.get(f.attname, models.DEFERRED) for f in cls._meta.concrete_fields]
        obj = cls(*values)
        obj._state.adding = False
        obj._state.db = db
        obj.loaded_by = "its own from_db"
        return obj


class Place(models.Model):
    """Never registered, but its multi-table child ``Restaurant`` is."""

    name = models.CharField(max_length=100)
    slug = models.SlugField()
    tags = models.ManyToManyField(Tag, blank=True, related_name="places")

    def __str__(self) -> str:
        return str(self.name)


class Restaurant(Place):
    cuisine = models.CharField(max_length=50, blank=True)

    def get_absolute_url(self) -> str:
        return f"/restaurants/{self.slug}/"


class Article(models.Model):
    """Like a flat page: one URL on each site it is on."""

    url = models.CharField(max_length=100)
    title = models.CharField(max_length=200, blank=True)
    hidden = models.BooleanField(default=False)
    edited_by = models.CharField(max_length=100, blank=True)
    sites = models.ManyToManyField("sites.Site", blank=True)

    def __str__(self) -> str:
        return str(self.url)


class Item(models.Model):
    """Bulk operations (``update()``, ``bulk_create()``, ``bulk_update()``) submit too."""

    slug = models.SlugField()
    status = models.CharField(max_length=20, default="draft")
    stock = models.PositiveIntegerField(default=0)

    objects = IndexNowQuerySet.as_manager()

    def __str__(self) -> str:
        return str(self.slug)

    def get_absolute_url(self) -> str:
        return f"/items/{self.slug}/"


class Story(models.Model):
    """Its registration's ``urls()`` reads a relation: a query when the URLs are worked out."""

    slug = models.SlugField()
    tags = models.ManyToManyField(Tag, blank=True, related_name="stories")

    def __str__(self) -> str:
        return str(self.slug)
