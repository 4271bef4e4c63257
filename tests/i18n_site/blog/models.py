"""A story translated with django-modeltranslation (see translation.py), an article
translated with django-parler, a guide (modeltranslation) served on a host per language."""

from __future__ import annotations

from django.db import models
from django.urls import reverse
from parler.models import TranslatableModel, TranslatedFields


class Story(models.Model):
    title = models.CharField(max_length=200, blank=True)
    slug = models.SlugField(blank=True)
    body = models.TextField(blank=True)
    status = models.CharField(max_length=20, default="draft")
    published_at = models.DateTimeField(null=True, blank=True)

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("story", args=[self.slug])


class Article(TranslatableModel):
    status = models.CharField(max_length=20, default="draft")
    translations = TranslatedFields(
        title=models.CharField(max_length=200),
        slug=models.SlugField(),
        body=models.TextField(blank=True),
    )

    def get_absolute_url(self) -> str:
        return reverse("article", args=[self.slug])


class Guide(models.Model):
    title = models.CharField(max_length=200, blank=True)
    slug = models.SlugField(blank=True)

    def __str__(self) -> str:
        return self.title

    def get_absolute_url(self) -> str:
        return reverse("guide", args=[self.slug])
