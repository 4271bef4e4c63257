"""Drafts, publishing and slug changes, through djangocms-versioning's admin views
and through its API (``Version.publish()``)."""

from __future__ import annotations

import pytest
from cms.api import create_page
from cms.models import Page
from django.contrib.auth.models import AbstractBaseUser
from django.db import IntegrityError, transaction

from indexnow_django import batch
from tests.djangocms_site.fixtures import (
    Tree,
    W,
    add,
    admin_add,
    admin_publish,
    draft,
    edit,
    posted,
    publish,
)


def test_drafts_send_nothing(tree: Tree, admin, engine) -> None:
    # A new page (a draft), a draft of a live page, a draft that changes a slug.
    fresh = admin_add(admin, tree.news, "Fresh", "fresh")
    edit(admin, tree.about, title="About us")
    edit(admin, tree.about, slug="company")
    edit(admin, tree.team, "de", slug="leute")
    edit(admin, fresh, slug="fresher")

    assert engine.posts == []
    # The live URLs did not move.
    assert admin.get("/about/team/").status_code == 200
    assert admin.get("/company/").status_code == 404
    # Publishing one of them sends it, and none of the other drafts.
    admin_publish(admin, fresh)
    assert posted(engine) == [f"{W}/news/fresher/"]


def test_publish_first_time_and_again(tree: Tree, admin, engine) -> None:
    fresh = admin_add(admin, tree.news, "Fresh", "fresh")
    admin_publish(admin, fresh)
    assert posted(engine) == [f"{W}/news/fresh/"]
    assert admin.get("/news/fresh/").status_code == 200

    engine.reset()  # a new version, same slug: sent again
    edit(admin, fresh, title="Fresher")
    admin_publish(admin, fresh)
    assert posted(engine) == [f"{W}/news/fresh/"]
    assert len(engine.posts) == 1


def test_a_parent_slug_change_sends_its_published_descendants_not_its_drafts(
    tree: Tree, admin, engine
) -> None:
    deeper = add(tree.user, "Deeper", "deeper", tree.team)
    admin_add(admin, tree.about, "Draft child", "draft-child")  # never published
    engine.reset()
    edit(admin, tree.about, slug="company")
    assert engine.posts == []

    admin_publish(admin, tree.about)

    assert posted(engine) == sorted(
        [
            f"{W}/about/",
            f"{W}/company/",
            f"{W}/about/team/",
            f"{W}/company/team/",
            f"{W}/about/team/deeper/",
            f"{W}/company/team/deeper/",
        ]
    )
    assert len(engine.posts) == 1  # one request, one flush
    # What was sent is where the pages are now; the German ones did not move.
    for path in ("/company/", "/company/team/", "/company/team/deeper/", "/de/ueber-uns/"):
        assert admin.get(path).status_code == 200, path
    assert admin.get("/about/team/").status_code == 404
    assert deeper.get_absolute_url("en") == "/company/team/deeper/"


def test_an_overwritten_url_sends_the_old_and_new_url(tree: Tree, admin, engine) -> None:
    edit(admin, tree.team, overwrite_url="people")
    admin_publish(admin, tree.team)
    assert posted(engine) == [f"{W}/about/team/", f"{W}/people/"]


def test_api_publish_of_a_draft_slug_change(tree: Tree, engine) -> None:
    draft(tree.news, tree.user, slug="press")
    assert engine.posts == []
    with batch():
        publish(tree.news, tree.user)
        assert engine.posts == []  # the unit of work ends with the block
    assert posted(engine) == [f"{W}/news/", f"{W}/press/"]


def test_api_publish_outside_any_unit_is_sent_when_it_commits(tree: Tree, engine) -> None:
    page = add(tree.user, "Script", "script", tree.news, live=False)
    assert engine.posts == []
    publish(page, tree.user)
    assert posted(engine) == [f"{W}/news/script/"]


def test_a_rolled_back_publish_sends_nothing(tree: Tree, admin, engine) -> None:
    # djangocms-versioning refuses a slug that another page uses: its transaction
    # rolls back, and the admin says so.
    edit(admin, tree.news, slug="about")
    response = admin_publish(admin, tree.news)
    messages = [str(m) for m in response.wsgi_request._messages]
    assert any("could not be published" in m for m in messages), messages
    # Code that publishes inside a transaction that fails.
    draft(tree.team, tree.user, slug="crew")
    with pytest.raises(RuntimeError), transaction.atomic():
        publish(tree.team, tree.user)
        raise RuntimeError("something else failed")

    assert engine.posts == []
    assert admin.get("/news/").status_code == 200
    assert admin.get("/about/team/").status_code == 200
    # The next publish that gets through is compared with what is live.
    edit(admin, tree.news, slug="press")
    admin_publish(admin, tree.news)
    assert posted(engine) == [f"{W}/news/", f"{W}/press/"]


def _publish_twice(page: Page, user: AbstractBaseUser) -> None:
    publish(page, user)
    draft(page, user, slug="twice")
    publish(page, user)


def test_two_publishes_in_one_transaction_are_compared_with_what_was_live_before(
    tree: Tree, engine
) -> None:
    draft(tree.news, tree.user, slug="first-try")
    with transaction.atomic():
        _publish_twice(tree.news, tree.user)
    # /first-try/ lived only inside the transaction: engines never saw it.
    assert posted(engine) == [f"{W}/news/", f"{W}/twice/"]


def test_a_publish_after_a_failed_one_sends_what_the_engines_knew(tree: Tree, engine) -> None:
    draft(tree.news, tree.user, slug="about")
    with pytest.raises(IntegrityError):
        publish(tree.news, tree.user)
    assert engine.posts == []
    # The editor picks another slug: the old URL is the one that was live.
    draft(tree.news, tree.user, slug="press")
    publish(tree.news, tree.user)
    assert posted(engine) == [f"{W}/news/", f"{W}/press/"]


def test_a_login_required_page_is_never_sent(tree: Tree, admin, engine) -> None:
    members = create_page(
        "Members",
        "page.html",
        "en",
        slug="members",
        parent=tree.home,
        login_required=True,
        created_by=tree.user,
    )
    publish(members, tree.user)
    admin.logout()
    assert admin.get("/members/").status_code == 302  # engines would get the login page
    assert engine.posts == []
    draft(tree.news, tree.user, slug="press")
    publish(tree.news, tree.user)
    assert posted(engine) == [f"{W}/news/", f"{W}/press/"]


def test_under_atomic_requests_a_refused_publish_leaves_no_trace(
    tree: Tree, admin, engine, monkeypatch
) -> None:
    from django.db import connection

    # The whole request is one transaction; the refused publish is a savepoint in it.
    monkeypatch.setitem(connection.settings_dict, "ATOMIC_REQUESTS", True)
    edit(admin, tree.news, slug="about")
    response = admin_publish(admin, tree.news)
    messages = [str(m) for m in response.wsgi_request._messages]
    assert any("could not be published" in m for m in messages), messages
    assert engine.posts == []

    edit(admin, tree.news, slug="press")
    admin_publish(admin, tree.news)
    assert posted(engine) == [f"{W}/news/", f"{W}/press/"]
    assert len(engine.posts) == 1
