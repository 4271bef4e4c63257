from django.db import models
from wagtail.models import Page


class HomePage(Page):
    pass


class SectionPage(Page):
    intro = models.TextField(blank=True)


class ArticlePage(Page):
    body = models.TextField(blank=True)
