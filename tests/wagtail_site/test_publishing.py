"""Drafts, publishing and renaming, through Wagtail's admin views and its page API."""

from __future__ import annotations

from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from indexnow_django.units.collector import batch
from tests.wagtail_site.fixtures import Tree, add, edit_url, form, posted, publish_data
from tests.wagtail_site.pages.models import ArticlePage

W = "https://www.example.com"


def test_drafts_send_nothing(tree: Tree, admin, engine) -> None:
    # A new page saved as a draft.
    add_url = reverse(
        "wagtailadmin_pages:add", args=["wagtail_site_pages", "articlepage", tree.news.pk]
    )
    response = admin.post(add_url, {"title": "Draft", "slug": "draft", "body": "x"})
    assert response.status_code == 302, response.content[:500]
    draft = ArticlePage.objects.get(slug="draft")
    assert not draft.live
    # A draft of a live page, then a draft that changes its slug.
    response = admin.post(edit_url(tree.first), form(tree.first, body="new text"))
    assert response.status_code == 302
    response = admin.post(edit_url(tree.first), form(tree.first, slug="renamed"))
    assert response.status_code == 302
    response = admin.post(edit_url(draft), form(draft, slug="draft-renamed"))
    assert response.status_code == 302

    tree.reload()
    assert tree.first.slug == "first" and tree.first.has_unpublished_changes
    assert engine.posts == []


def test_publish_first_time_and_again(tree: Tree, admin, engine) -> None:
    add_url = reverse(
        "wagtailadmin_pages:add", args=["wagtail_site_pages", "articlepage", tree.news.pk]
    )
    data = {"title": "Fresh", "slug": "fresh", "body": "x", "action-publish": "action-publish"}
    response = admin.post(add_url, data)
    assert response.status_code == 302, response.content[:500]
    assert posted(engine) == [f"{W}/news/fresh/"]
    assert len(engine.posts) == 1

    engine.reset()
    fresh = ArticlePage.objects.get(slug="fresh")
    response = admin.post(edit_url(fresh), publish_data(fresh, body="y"))
    assert response.status_code == 302
    assert posted(engine) == [f"{W}/news/fresh/"]


def test_publishing_a_draft_slug_change_sends_the_old_url(tree: Tree, admin, engine) -> None:
    admin.post(edit_url(tree.first), form(tree.first, slug="renamed"))  # a draft: nothing
    assert engine.posts == []
    tree.reload()
    # Publishing the page (from the draft revision) with its latest form.
    response = admin.post(edit_url(tree.first), publish_data(tree.first, slug="renamed"))
    assert response.status_code == 302
    assert posted(engine) == [f"{W}/news/first/", f"{W}/news/renamed/"]


def test_a_parent_slug_change_sends_every_live_descendant(tree: Tree, admin, engine) -> None:
    draft_child = ArticlePage(title="Unpublished", slug="unpublished", live=False)
    tree.news.add_child(instance=draft_child)
    deeper = add(tree.first, ArticlePage, "Deeper", "deeper")
    engine.reset()

    response = admin.post(edit_url(tree.news), publish_data(tree.news, slug="press"))
    assert response.status_code == 302
    assert posted(engine) == sorted(
        [
            f"{W}/news/",
            f"{W}/press/",
            f"{W}/news/first/",
            f"{W}/press/first/",
            f"{W}/news/first/deeper/",
            f"{W}/press/first/deeper/",
            f"{W}/news/second/",
            f"{W}/press/second/",
        ]
    )
    assert len(engine.posts) == 1  # one request, one flush
    deeper.refresh_from_db()
    assert deeper.url_path == "/home/press/first/deeper/"


def test_page_api_publish_and_revision_publish(tree: Tree, engine) -> None:
    with batch():
        page = ArticlePage.objects.get(pk=tree.second.pk)
        page.slug = "second-take"
        page.save_revision().publish()
    assert posted(engine) == [f"{W}/news/second-take/", f"{W}/news/second/"]
    assert len(engine.posts) == 1

    engine.reset()
    page = ArticlePage.objects.get(pk=tree.second.pk)
    page.body = "again"
    page.save_revision().publish()  # outside any unit of work: sent when it commits
    assert posted(engine) == [f"{W}/news/second-take/"]


def test_publishing_a_page_sends_its_aliases_too(tree: Tree, admin, engine) -> None:
    tree.first.create_alias(parent=tree.home, update_slug="first-alias")
    assert posted(engine) == [f"{W}/first-alias/"]  # an alias is a live page of its own

    engine.reset()
    response = admin.post(edit_url(tree.first), publish_data(tree.first, body="new"))
    assert response.status_code == 302
    assert posted(engine) == [f"{W}/first-alias/", f"{W}/news/first/"]
    assert len(engine.posts) == 1


def test_a_draft_save_costs_no_query(tree: Tree, engine) -> None:
    from indexnow_django.contrib.wagtail import handlers

    page = ArticlePage.objects.get(pk=tree.first.pk)

    def queries_of_a_draft(body: str) -> int:
        page.body = body
        with CaptureQueriesContext(connection) as queries:
            page.save_revision()
        return len(queries.captured_queries)

    queries_of_a_draft("warm-up")
    tracked = queries_of_a_draft("tracked")
    handlers.disconnect()
    try:
        untracked = queries_of_a_draft("untracked")
    finally:
        handlers.connect()
    assert tracked == untracked
    assert engine.posts == []


def _integration_receivers(signal, sender) -> list:
    from indexnow_django.contrib.wagtail import handlers

    sync_receivers, async_receivers = signal._live_receivers(sender)
    return [r for r in [*sync_receivers, *async_receivers] if r.__module__ == handlers.__name__]


def test_saves_of_other_models_reach_none_of_the_integration_handlers() -> None:
    """A site's models other than page types pay nothing on save for the integration."""
    from django.contrib.auth.models import Group
    from django.db.models.signals import post_save, pre_save

    for signal in (pre_save, post_save):
        assert _integration_receivers(signal, Group) == [], signal
        assert _integration_receivers(signal, ArticlePage) != [], signal


def test_a_page_type_created_later_gets_the_save_handlers() -> None:
    """``class_prepared`` (Django sends it for each model class it creates) connects a page
    type that did not exist when the integration was connected."""
    from django.db.models.signals import class_prepared, post_save, pre_save

    from indexnow_django.contrib.wagtail import handlers

    label = ArticlePage._meta.label_lower
    for signal, name in ((pre_save, "pre_save"), (post_save, "post_save")):
        signal.disconnect(
            sender=ArticlePage, dispatch_uid=f"{handlers._RECEIVERS.uid}.{name}.{label}"
        )
        assert _integration_receivers(signal, ArticlePage) == []
    class_prepared.send(sender=ArticlePage)
    for signal in (pre_save, post_save):
        assert _integration_receivers(signal, ArticlePage) != []
