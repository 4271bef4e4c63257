"""Two languages, two sites with their own domains, a real rq worker, and ``indexnow_check``."""

from __future__ import annotations

import io

import pytest
from django.contrib.sites.models import Site
from django.core.management import call_command

from tests.djangocms_site.fixtures import (
    BLOG,
    Tree,
    W,
    add,
    admin_publish,
    admin_unpublish,
    edit,
    posted,
    translate,
)
from tests.needs import ONE_JOB
from tests.rqhelpers import finished_ids, wait_for_count


def test_each_language_has_its_own_url(tree: Tree, admin, engine) -> None:
    # A German version of News, as a draft: nothing; published: its German URL only.
    translate(tree.news, tree.user, "Neuigkeiten", "neuigkeiten", live=False)
    assert engine.posts == []
    admin_publish(admin, tree.news, "de")
    assert posted(engine) == [f"{W}/de/neuigkeiten/"]

    # A German slug change: its German URLs and its German descendant's; English untouched.
    engine.reset()
    edit(admin, tree.about, "de", slug="wir")
    admin_publish(admin, tree.about, "de")
    assert posted(engine) == [
        f"{W}/de/ueber-uns/",
        f"{W}/de/ueber-uns/mannschaft/",
        f"{W}/de/wir/",
        f"{W}/de/wir/mannschaft/",
    ]
    assert admin.get("/de/wir/mannschaft/").status_code == 200
    assert admin.get("/about/team/").status_code == 200

    # Unpublishing the English page leaves the German one live.
    engine.reset()
    admin_unpublish(admin, tree.team)
    assert posted(engine) == [f"{W}/about/team/"]


def test_each_site_gets_its_urls_on_its_domain_with_its_key(
    tree: Tree, admin, engine, indexnow_settings
) -> None:
    indexnow_settings(
        HOSTS={
            "www.example.com": {},
            "blog.example.org": {"KEY": "blog-site-key-0123456789"},
        }
    )
    edit(admin, tree.post, slug="first-post")
    admin_publish(admin, tree.post)
    edit(admin, tree.blog_home, title="The blog")
    admin_publish(admin, tree.blog_home)
    assert posted(engine) == [f"{BLOG}/", f"{BLOG}/first-post/", f"{BLOG}/post/"]
    # One POST per request (two publishes), each to the blog's host with its key.
    assert [(p.json["host"], p.json["key"]) for p in engine.posts] == [
        ("blog.example.org", "blog-site-key-0123456789")
    ] * 2

    # A site added later is an allowed host at once, with the default key.
    engine.reset()
    shop = Site.objects.create(domain="shop.example.net", name="Shop")
    add(tree.user, "Shop", "shop", site=shop)
    assert posted(engine) == ["https://shop.example.net/shop/"]
    assert engine.posts[0].json["key"] == "test-key-0123456789"


@pytest.mark.worker
def test_a_real_worker_delivers_an_admin_publish(
    tree: Tree, admin, engine, start_worker, indexnow_settings, redis_conn
) -> None:
    overrides = ONE_JOB  # the jobs of the two publishes, followed to their end
    indexnow_settings(**overrides)
    start_worker(overrides, extra_env={"DJANGO_SETTINGS_MODULE": "tests.djangocms_site.settings"})
    edit(admin, tree.about, slug="company")
    admin_publish(admin, tree.about)
    # The first job done before the next edit: on SQLite, an admin request that reads and
    # then writes while the worker writes the history fails with "database is locked".
    engine.wait_for_posts(1, timeout=30)
    wait_for_count(lambda: len(finished_ids(redis_conn)), 1)
    edit(admin, tree.post, slug="hello")
    admin_publish(admin, tree.post)

    posts = engine.wait_for_posts(2, timeout=30)
    # Both jobs done (and the worker idle, so that it stops at once when the test ends).
    wait_for_count(lambda: len(finished_ids(redis_conn)), 2)

    by_host = {post.json["host"]: sorted(post.urls) for post in posts}
    assert by_host == {
        "www.example.com": [
            f"{W}/about/",
            f"{W}/about/team/",
            f"{W}/company/",
            f"{W}/company/team/",
        ],
        "blog.example.org": [f"{BLOG}/hello/", f"{BLOG}/post/"],
    }


def test_indexnow_check_lists_the_sites_and_their_domains(tree: Tree) -> None:
    other = Site.objects.create(domain="example.net:8000", name="Other")
    out = io.StringIO()
    call_command("indexnow_check", "--offline", stdout=out)
    text = out.getvalue()
    assert "Example: django CMS site 1, 4 page(s), host www.example.com" in text, text
    assert f"Blog: django CMS site {tree.blog.pk}, 2 page(s), host blog.example.org" in text, text
    assert f"Other: django CMS site {other.pk}, 0 page(s), host example.net:8000" in text, text
    # Its pages are tracked with no registration: the check does not say that nothing is.
    assert "no model is registered" not in text, text
    assert (
        "OK    django CMS pages: every page in each language, through djangocms-versioning's "
        "publishing (indexnow_django.contrib.djangocms, no registration needed)"
    ) in text, text
