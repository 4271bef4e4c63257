"""A ``django.tasks`` task of the test site's own: it saves tracked objects, like a site's
import task. Built on the backend alias given when it is enqueued (``.using(backend=...)``)."""

from __future__ import annotations

import importlib.util

from tests.testapp.jobs import save_pages

if importlib.util.find_spec("django.tasks") is not None:
    from django.tasks import task
else:  # Django 5.2: the backport
    from django_tasks import task  # type: ignore[no-redef]


@task
def save_pages_task(paths: list[str]) -> int:
    """Create one ``Page`` per path, each save committed on its own."""
    return save_pages(paths)


if importlib.util.find_spec("celery") is not None:
    from celery import shared_task

    @shared_task(name="tests.testapp.tasks.publish_posts")
    def publish_posts(slugs: list[str]) -> int:
        """A Celery task of the site's own: publish one ``Post`` per slug, each save
        committed on its own."""
        from tests.testapp.models import Post

        for slug in slugs:
            Post.objects.create(title=slug, slug=slug, status=Post.PUBLISHED)
        return len(slugs)
