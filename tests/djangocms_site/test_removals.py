"""Unpublishing, moving and deleting pages, through django CMS's admin and its API."""

from __future__ import annotations

from cms.models import Page
from django.urls import reverse

from tests.djangocms_site.fixtures import (
    Tree,
    W,
    add,
    admin_add,
    admin_publish,
    admin_unpublish,
    posted,
    publish,
    version,
    version_url,
)


def test_unpublish_sends_the_page_and_the_descendants_it_takes_offline(
    tree: Tree, admin, engine
) -> None:
    add(tree.user, "Deeper", "deeper", tree.team)
    admin_add(admin, tree.about, "Draft child", "draft-child")
    engine.reset()

    admin_unpublish(admin, tree.about)

    assert posted(engine) == [f"{W}/about/", f"{W}/about/team/", f"{W}/about/team/deeper/"]
    assert admin.get("/about/team/").status_code == 404
    assert admin.get("/de/ueber-uns/mannschaft/").status_code == 200  # German stays

    # Publishing it again brings them all back (a new draft of the unpublished version).
    engine.reset()
    response = admin.post(version_url("revert", version(tree.about, "en", "unpublished")), {})
    assert response.status_code == 302, response.content[:500]
    assert engine.posts == []  # a draft
    admin_publish(admin, tree.about)
    assert posted(engine) == [f"{W}/about/", f"{W}/about/team/", f"{W}/about/team/deeper/"]
    assert admin.get("/about/team/deeper/").status_code == 200


def test_api_unpublish(tree: Tree, engine) -> None:
    version(tree.news, "en", "published").unpublish(tree.user)
    assert posted(engine) == [f"{W}/news/"]


def test_a_page_under_an_unpublished_parent_is_sent_when_the_parent_is_back(
    tree: Tree, admin, engine
) -> None:
    admin_unpublish(admin, tree.about)
    engine.reset()
    orphan = add(tree.user, "Orphan", "orphan", tree.about, live=False)
    publish(orphan, tree.user)
    assert engine.posts == []  # it has no URL while its parent is offline

    admin.post(version_url("revert", version(tree.about, "en", "unpublished")), {})
    admin_publish(admin, tree.about)
    assert posted(engine) == [f"{W}/about/", f"{W}/about/orphan/", f"{W}/about/team/"]


def move(admin, page: Page, target: Page, position: int = 0) -> None:
    url = reverse("admin:cms_page_move_page", args=[page.pk])
    response = admin.post(url, {"id": page.pk, "target": target.pk, "position": position})
    assert response.status_code == 200, response.content[:500]


def test_admin_move_sends_old_and_new_urls_of_the_subtree(tree: Tree, admin, engine) -> None:
    deeper = add(tree.user, "Deeper", "deeper", tree.team)
    admin_add(admin, tree.team, "Draft child", "draft-child")
    engine.reset()

    move(admin, tree.team, tree.news)

    expected = [
        f"{W}/about/team/",
        f"{W}/news/team/",
        # News has no German content: django CMS builds the German path on its English one.
        f"{W}/de/ueber-uns/mannschaft/",
        f"{W}/de/news/mannschaft/",
    ]
    # django CMS 5.1.3 leaves the paths of a moved page's descendants as they were
    # (the page keeps answering at its old URL): what is sent follows what is served.
    moved = Page.objects.get(pk=deeper.pk).get_absolute_url("en")
    if moved != "/about/team/deeper/":
        expected += [f"{W}/about/team/deeper/", f"{W}{moved}"]
    assert posted(engine) == sorted(expected)
    assert len(engine.posts) == 1
    for url in expected:
        path = url.removeprefix(W)
        assert admin.get(path).status_code == (200 if url in expected[1::2] else 404), path


def test_admin_delete_sends_the_live_urls_of_the_subtree(tree: Tree, admin, engine) -> None:
    admin_add(admin, tree.about, "Draft child", "draft-child")
    engine.reset()
    response = admin.post(reverse("admin:cms_page_delete", args=[tree.about.pk]), {"post": "yes"})
    assert response.status_code == 302, response.content[:500]
    assert not Page.objects.filter(pk=tree.about.pk).exists()
    assert posted(engine) == sorted(
        [
            f"{W}/about/",
            f"{W}/about/team/",
            f"{W}/de/ueber-uns/",
            f"{W}/de/ueber-uns/mannschaft/",
        ]
    )
    assert len(engine.posts) == 1


def test_api_delete(tree: Tree, engine) -> None:
    Page.objects.get(pk=tree.news.pk).delete()
    assert posted(engine) == [f"{W}/news/"]
