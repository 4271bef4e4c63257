"""Unpublishing, deleting and moving, through the admin; expiry and scheduled go-live
through ``manage.py publish_scheduled``."""

from __future__ import annotations

import datetime

from django.urls import reverse
from django.utils import timezone
from wagtail.models import Page, Revision

from tests.wagtail_site.fixtures import Tree, add, edit_url, posted, publish_data, run_manage
from tests.wagtail_site.pages.models import ArticlePage, SectionPage

W = "https://www.example.com"


def test_unpublish_sends_the_urls_that_were_live(tree: Tree, admin, engine) -> None:
    url = reverse("wagtailadmin_pages:unpublish", args=[tree.news.pk])
    response = admin.post(url, {"include_descendants": "on"})
    assert response.status_code == 302
    assert posted(engine) == [f"{W}/news/", f"{W}/news/first/", f"{W}/news/second/"]
    assert len(engine.posts) == 1
    assert not Page.objects.filter(path__startswith=tree.news.path, live=True).exists()

    engine.reset()
    # Unpublishing what is not live sends nothing.
    admin.post(reverse("wagtailadmin_pages:unpublish", args=[tree.first.pk]), {})
    assert engine.posts == []


def test_delete_a_page_and_a_subtree(tree: Tree, admin, engine) -> None:
    response = admin.post(reverse("wagtailadmin_pages:delete", args=[tree.second.pk]), {})
    assert response.status_code == 302
    assert posted(engine) == [f"{W}/news/second/"]

    engine.reset()
    draft = ArticlePage(title="Draft", slug="draft", live=False)
    tree.news.add_child(instance=draft)
    add(tree.first, ArticlePage, "Deeper", "deeper")
    engine.reset()
    response = admin.post(reverse("wagtailadmin_pages:delete", args=[tree.news.pk]), {})
    assert response.status_code == 302
    assert posted(engine) == [f"{W}/news/", f"{W}/news/first/", f"{W}/news/first/deeper/"]
    assert len(engine.posts) == 1
    assert not Page.objects.filter(slug__in=["news", "first", "deeper", "draft"]).exists()


def test_move_sends_old_and_new_urls_of_the_page_and_its_descendants(
    tree: Tree, admin, engine
) -> None:
    archive = add(tree.home, SectionPage, "Archive", "archive")
    add(tree.first, ArticlePage, "Deeper", "deeper")
    engine.reset()
    url = reverse("wagtailadmin_pages:move_confirm", args=[tree.first.pk, archive.pk])
    response = admin.post(url, {})
    assert response.status_code == 302, response.content[:300]
    assert posted(engine) == sorted(
        [
            f"{W}/news/first/",
            f"{W}/archive/first/",
            f"{W}/news/first/deeper/",
            f"{W}/archive/first/deeper/",
        ]
    )
    assert len(engine.posts) == 1


def test_page_api_move(tree: Tree, engine) -> None:
    archive = add(tree.home, SectionPage, "Archive", "archive")
    engine.reset()
    tree.second.move(archive, pos="last-child")  # outside any unit: sent when it commits
    assert posted(engine) == [f"{W}/archive/second/", f"{W}/news/second/"]


def test_future_go_live_sends_nothing_until_publish_scheduled(tree: Tree, admin, engine) -> None:
    add_url = reverse(
        "wagtailadmin_pages:add", args=["wagtail_site_pages", "articlepage", tree.news.pk]
    )
    later = timezone.now() + datetime.timedelta(days=1)
    data = {
        "title": "Later",
        "slug": "later",
        "body": "x",
        "go_live_at": timezone.localtime(later).strftime("%Y-%m-%d %H:%M"),
        "action-publish": "action-publish",
    }
    response = admin.post(add_url, data)
    assert response.status_code == 302, response.content[:500]
    later_page = ArticlePage.objects.get(slug="later")
    assert not later_page.live
    # A live page's scheduled new version (with a new slug): nothing yet either.
    response = admin.post(
        edit_url(tree.first), publish_data(tree.first, slug="first-v2", go_live_at=later)
    )
    assert response.status_code == 302, response.content[:500]
    # A live page that expires.
    expiring = ArticlePage.objects.get(pk=tree.second.pk)
    expiring.expire_at = timezone.now() - datetime.timedelta(minutes=1)
    expiring.save()
    assert posted(engine) == []
    result = run_manage("publish_scheduled")  # nothing is due but the expiry
    assert result.returncode == 0, result.stderr
    assert posted(engine) == [f"{W}/news/second/"]

    engine.reset()
    # The moment comes (the scheduled revisions are moved to a second ago).
    past = timezone.now() - datetime.timedelta(seconds=1)
    for revision in Revision.objects.exclude(approved_go_live_at=None):
        revision.content["go_live_at"] = past.isoformat()
        revision.approved_go_live_at = past
        revision.save()
    assert Revision.objects.exclude(approved_go_live_at=None).count() == 2
    result = run_manage("publish_scheduled")
    assert result.returncode == 0, result.stderr
    assert posted(engine) == [f"{W}/news/first-v2/", f"{W}/news/first/", f"{W}/news/later/"]
    assert len(engine.posts) == 1  # the command is one unit of work
    assert ArticlePage.objects.get(slug="later").live


def test_removals_right_after_a_publish_get_through_the_debounce(
    tree: Tree, admin, engine, settings
) -> None:
    """Within DEBOUNCE["TTL"], a page that stops being public is still sent, once a side."""
    settings.INDEXNOW = {**settings.INDEXNOW, "DEBOUNCE": {"TTL": 600}}
    response = admin.post(edit_url(tree.second), publish_data(tree.second, body="y"))
    assert response.status_code == 302
    assert posted(engine) == [f"{W}/news/second/"]

    engine.reset()  # the same side again within the TTL: debounced
    admin.post(edit_url(tree.second), publish_data(tree.second, body="z"))
    assert engine.posts == []

    response = admin.post(reverse("wagtailadmin_pages:unpublish", args=[tree.second.pk]), {})
    assert response.status_code == 302
    assert posted(engine) == [f"{W}/news/second/"]

    engine.reset()  # published again: public once more, sent again
    tree.second.refresh_from_db()
    admin.post(edit_url(tree.second), publish_data(tree.second, body="w"))
    assert posted(engine) == [f"{W}/news/second/"]

    engine.reset()
    response = admin.post(reverse("wagtailadmin_pages:delete", args=[tree.second.pk]), {})
    assert response.status_code == 302
    assert posted(engine) == [f"{W}/news/second/"]
