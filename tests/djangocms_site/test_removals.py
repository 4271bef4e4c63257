"""Unpublishing, moving and deleting pages, through django CMS's admin and its API."""

from __future__ import annotations

import pytest
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


#: Language fallbacks (German pages on English paths when a German one is missing).
FALLBACKS = {
    "default": {
        "public": True,
        "fallbacks": ["en", "de"],
        "redirect_on_fallback": False,
        "hide_untranslated": True,
    }
}


@pytest.mark.parametrize("fallbacks", [False, True], ids=["no-fallbacks", "fallbacks"])
def test_admin_move_sends_old_and_new_urls_of_the_subtree(
    tree: Tree, admin, engine, settings, fallbacks: bool
) -> None:
    if fallbacks:
        settings.CMS_LANGUAGES = FALLBACKS
    deeper = add(tree.user, "Deeper", "deeper", tree.team)
    admin_add(admin, tree.team, "Draft child", "draft-child")
    engine.reset()

    move(admin, tree.team, tree.news)

    # What django CMS serves now: with fallbacks, django CMS 5.1.3 gives the German
    # page a path on News's English one, and leaves the paths below the moved page as
    # they were (they keep answering there). What is sent follows what is served.
    team = Page.objects.get(pk=tree.team.pk)
    german = team.get_absolute_url("de", fallback=False)
    below = Page.objects.get(pk=deeper.pk).get_absolute_url("en", fallback=False)
    expected = {f"{W}/about/team/": 404, f"{W}/news/team/": 200}
    expected[f"{W}/de/ueber-uns/mannschaft/"] = 404
    if german is not None:
        expected[f"{W}{german}"] = 200
    if below != "/about/team/deeper/":
        expected.update({f"{W}/about/team/deeper/": 404, f"{W}{below}": 200})
    assert (german, below) == (
        ("/de/news/mannschaft/", "/about/team/deeper/")
        if fallbacks
        else (None, "/news/team/deeper/")
    )
    assert posted(engine) == sorted(expected)
    assert len(engine.posts) == 1
    for url, status in expected.items():
        assert admin.get(url.removeprefix(W)).status_code == status, url


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
