"""Private pages, several sites, bulk actions, a hand registration next to the
integration, a real rq worker, and ``indexnow_check``."""

from __future__ import annotations

import io
import json
from typing import Any

from django.core.management import call_command
from django.urls import reverse
from wagtail.models import Page, PageViewRestriction, Site

from indexnow_django import ModelIndexNow
from indexnow_django.tracking import register, unregister
from tests.wagtail_site.fixtures import Tree, add, edit_url, posted, publish_data
from tests.wagtail_site.pages.models import ArticlePage, HomePage, SectionPage

W = "https://www.example.com"


def privacy(admin: Any, page: Page, restriction_type: str) -> None:
    url = reverse("wagtailadmin_pages:set_privacy", args=[page.pk])
    response = admin.post(url, {"restriction_type": restriction_type, "password": "", "groups": []})
    assert response.status_code == 200, response.content[:300]
    assert json.loads(response.content)["step"] == "set_privacy_done", response.content[:300]


def test_private_pages_are_sent_as_gone_then_never(tree: Tree, admin, engine) -> None:
    privacy(admin, tree.news, "login")
    assert PageViewRestriction.objects.filter(page=tree.news).exists()
    # They became private: what engines knew is sent so that they drop it.
    assert posted(engine) == [f"{W}/news/", f"{W}/news/first/", f"{W}/news/second/"]

    engine.reset()
    # Publishing a private page, a new private child, or a slug change: nothing.
    response = admin.post(edit_url(tree.first), publish_data(tree.first, body="changed"))
    assert response.status_code == 302
    add_url = reverse(
        "wagtailadmin_pages:add", args=["wagtail_site_pages", "articlepage", tree.news.pk]
    )
    data = {"title": "Hidden", "slug": "hidden", "body": "x", "action-publish": "action-publish"}
    assert admin.post(add_url, data).status_code == 302
    response = admin.post(edit_url(tree.second), publish_data(tree.second, slug="second-b"))
    assert response.status_code == 302
    assert (
        admin.post(reverse("wagtailadmin_pages:delete", args=[tree.first.pk]), {}).status_code
        == 302
    )
    assert engine.posts == []

    # Public again: its live pages are sent.
    privacy(admin, tree.news, "none")
    assert not PageViewRestriction.objects.exists()
    assert posted(engine) == [f"{W}/news/", f"{W}/news/hidden/", f"{W}/news/second-b/"]


def test_a_private_subtree_deleted_stays_unsent(tree: Tree, admin, engine) -> None:
    privacy(admin, tree.news, "login")
    engine.reset()
    assert (
        admin.post(reverse("wagtailadmin_pages:delete", args=[tree.news.pk]), {}).status_code == 302
    )
    assert not Page.objects.filter(pk=tree.news.pk).exists()
    assert engine.posts == []


def test_each_site_gets_its_urls_with_its_key(tree: Tree, admin, engine, indexnow_settings) -> None:
    indexnow_settings(
        HOSTS={
            "www.example.com": {"KEY": "www-key-0123456789"},
            "blog.example.org": {"KEY": "blog-site-key-0123456789"},
        }
    )
    # The same home page on a second host, and a blog with a root of its own.
    Site.objects.create(hostname="example.net", port=80, root_page=tree.home)
    blog_home = HomePage(title="Blog", slug="blog-home")
    tree.root.add_child(instance=blog_home)
    blog_home.save_revision().publish()
    Site.objects.create(hostname="blog.example.org", port=443, root_page=blog_home)
    post = add(blog_home, ArticlePage, "Post", "post")
    engine.reset()

    response = admin.post(edit_url(tree.first), publish_data(tree.first, body="new"))
    assert response.status_code == 302
    assert posted(engine) == ["http://example.net/news/first/", f"{W}/news/first/"]
    keys = {post.json["host"]: post.json["key"] for post in engine.posts}
    # example.net is allowed because it is a Wagtail site; it has the default key.
    assert keys == {"www.example.com": "www-key-0123456789", "example.net": "test-key-0123456789"}

    engine.reset()
    response = admin.post(edit_url(post), publish_data(post, slug="post-renamed"))
    assert response.status_code == 302
    assert posted(engine) == [
        "https://blog.example.org/post-renamed/",
        "https://blog.example.org/post/",
    ]
    assert [p.json["key"] for p in engine.posts] == ["blog-site-key-0123456789"]


def test_bulk_actions_are_one_flush_per_request(tree: Tree, admin, engine) -> None:
    third = ArticlePage(title="Third", slug="third", live=False)
    tree.news.add_child(instance=third)
    third.save_revision()
    fourth = ArticlePage(title="Fourth", slug="fourth", live=False)
    tree.news.add_child(instance=fourth)
    fourth.save_revision()
    archive = add(tree.home, SectionPage, "Archive", "archive")
    engine.reset()

    def bulk(action: str, pages: list[Page], data: dict[str, Any] | None = None) -> None:
        url = reverse("wagtail_bulk_action", args=["wagtailcore", "page", action])
        query = "&".join(f"id={page.pk}" for page in pages)
        response = admin.post(f"{url}?{query}", data or {})
        assert response.status_code == 302, response.content[:500]
        assert len(engine.posts) == 1, [p.urls for p in engine.posts]

    bulk("publish", [third, fourth])
    assert posted(engine) == [f"{W}/news/fourth/", f"{W}/news/third/"]
    engine.reset()
    bulk("move", [third, fourth], {"chooser": archive.pk})
    assert posted(engine) == sorted(
        [f"{W}/news/third/", f"{W}/news/fourth/", f"{W}/archive/third/", f"{W}/archive/fourth/"]
    )
    engine.reset()
    bulk("unpublish", [tree.first, tree.second])
    assert posted(engine) == [f"{W}/news/first/", f"{W}/news/second/"]
    engine.reset()
    bulk("delete", [third, fourth])
    assert posted(engine) == [f"{W}/archive/fourth/", f"{W}/archive/third/"]
    assert not ArticlePage.objects.filter(pk__in=[third.pk, fourth.pk]).exists()


class ArticleExtras(ModelIndexNow):
    """A hand registration for an extra URL (an article's print view)."""

    def is_published(self, obj: Any) -> bool:
        return bool(obj.live)

    def urls(self, obj: Any) -> list[str]:
        return [obj.full_url, obj.full_url + "print/"]


def test_a_hand_registration_adds_urls_without_sending_any_twice(tree: Tree, admin, engine) -> None:
    register(ArticlePage, ArticleExtras)
    try:
        response = admin.post(edit_url(tree.first), publish_data(tree.first, body="new"))
        assert response.status_code == 302
    finally:
        unregister(ArticlePage)
    assert len(engine.posts) == 1
    assert engine.posts[0].urls.count(f"{W}/news/first/") == 1
    assert posted(engine) == [f"{W}/news/first/", f"{W}/news/first/print/"]


def test_a_real_worker_delivers_an_admin_publish(
    tree: Tree, admin, engine, start_worker, indexnow_settings
) -> None:
    overrides = {"DISPATCH": "queue"}
    indexnow_settings(**overrides)
    start_worker(overrides, extra_env={"DJANGO_SETTINGS_MODULE": "tests.wagtail_site.settings"})
    # A site added while the worker runs: its host is allowed in the worker's jobs too.
    Site.objects.create(hostname="news.example.net", port=443, root_page=tree.news)
    response = admin.post(edit_url(tree.news), publish_data(tree.news, slug="press"))
    assert response.status_code == 302
    posts = engine.wait_for_posts(2, timeout=30)
    assert len(posts) == 2
    by_host = {post.json["host"]: sorted(post.urls) for post in posts}
    assert by_host == {
        "www.example.com": sorted(
            [
                f"{W}/news/",
                f"{W}/press/",
                f"{W}/news/first/",
                f"{W}/press/first/",
                f"{W}/news/second/",
                f"{W}/press/second/",
            ]
        ),
        # The site's root page moved, its pages' URLs did not: sent as published.
        "news.example.net": [
            "https://news.example.net/",
            "https://news.example.net/first/",
            "https://news.example.net/second/",
        ],
    }


def test_a_site_saved_by_another_process_is_noticed(tree: Tree, admin, engine, monkeypatch) -> None:
    from indexnow_django.contrib.wagtail import apps as integration

    monkeypatch.setattr(integration.SITES, "recheck_seconds", 0.0)
    admin.get("/test-key-0123456789.txt")  # a request: this process looks at the sites
    # Another process adds a site: no signal here (and Wagtail's cache of root paths,
    # shared in production, forgets them).
    Site.objects.bulk_create([Site(hostname="other.example.net", port=443, root_page=tree.home)])
    Site.clear_site_root_paths_cache()
    response = admin.post(edit_url(tree.first), publish_data(tree.first, body="new"))
    assert response.status_code == 302
    assert posted(engine) == ["https://other.example.net/news/first/", f"{W}/news/first/"]


def test_indexnow_check_lists_the_sites_and_their_hosts(tree: Tree) -> None:
    Site.objects.create(hostname="example.net", port=8000, root_page=tree.home)
    out = io.StringIO()
    call_command("indexnow_check", "--offline", stdout=out)
    text = out.getvalue()
    assert "www.example.com" in text and "example.net:8000" in text, text
    assert "https://www.example.com/ root page '/home/' (default)" in text, text
    # Its pages are tracked with no registration: the check does not say that nothing is.
    assert "no model is registered" not in text, text
    assert (
        "OK    Wagtail pages: every page type, through Wagtail's publishing events "
        "(indexnow_django.contrib.wagtail, no registration needed)"
    ) in text, text


def test_a_fresh_site_on_localhost_sends_nothing_and_names_the_wagtail_site(
    tree: Tree, admin, engine, caplog
) -> None:
    """Wagtail's migrations make the default Site localhost:80: its URLs never reach an
    engine, a warning names the host and the Wagtail Site, and indexnow_check fails."""
    import logging

    import pytest
    from django.core.management.base import CommandError

    caplog.set_level(logging.WARNING, logger="indexnow_django")
    tree.site.hostname, tree.site.port = "localhost", 80
    tree.site.save()
    engine.reset()

    response = admin.post(edit_url(tree.first), publish_data(tree.first, body="new"))

    assert response.status_code == 302
    assert engine.posts == []
    why = "a name only a private network resolves, from a Wagtail Site"
    messages = [r.getMessage() for r in caplog.records]
    assert any(f"host 'localhost': it cannot be public ({why})" in m for m in messages), messages
    assert any("'http://localhost/news/first/'" in m for m in messages), messages
    out = io.StringIO()
    with pytest.raises(CommandError):
        call_command("indexnow_check", "--offline", stdout=out, no_color=True)
    assert f"FAIL  localhost: cannot be public ({why})" in out.getvalue()
