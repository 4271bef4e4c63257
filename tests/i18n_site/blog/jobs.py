"""Jobs of the site's own, run by a real worker: they publish stories and articles."""

from __future__ import annotations

from .models import Article, Story


def publish_stories(pks: list[int]) -> int:
    for story in Story.objects.filter(pk__in=pks):
        story.status = "published"
        story.save()
    return len(pks)


def publish_articles(pks: list[int]) -> int:
    for article in Article.objects.filter(pk__in=pks):
        article.status = "published"
        article.save()
    return len(pks)
