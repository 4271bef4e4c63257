"""Registration and the change table: what a save, a delete or an m2m change submits.

Outside any unit of work each commit flushes its own URLs, and these tests
send at once, in process, to the loopback engine (``AT_ONCE``), so every flush
here is one POST the engine received. Debouncing is off, so that a URL
sent twice shows twice.
"""

from __future__ import annotations

import datetime
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from django.contrib.sites.models import Site
from django.core.management import call_command
from django.db import connection, transaction
from django.db.models import Model
from django.db.models.signals import post_init
from django.test.utils import CaptureQueriesContext
from django.utils import timezone

import indexnow_django
from indexnow_django import ModelIndexNow, batch, register, tracking
from indexnow_django.exceptions import RegistrationError
from indexnow_django.registration import registry as registry_module
from indexnow_django.registration.registry import get_registration, registry, unregister
from indexnow_django.tracking.state import LOADED
from tests.needs import AT_ONCE
from tests.testapp.indexnow import PostIndexNow, RestaurantIndexNow
from tests.testapp.models import (
    Article,
    Document,
    FeaturedPost,
    Page,
    Place,
    Post,
    PostLoadedItsOwnWay,
    PostProxy,
    Restaurant,
    Tag,
    Untracked,
)

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.indexnow(**AT_ONCE, DEBOUNCE={"TTL": 0}),
]

BASE = "https://www.example.com"
#: On a test that counts the queries of a save: its send records no POST in the history.
QUERIES_OF_THE_SAVE = pytest.mark.indexnow(HISTORY={"ENABLED": False})


def sent(engine: Any) -> list[list[str]]:
    """The URL list of every POST the engine received, in order."""
    return [post.urls for post in engine.posts]


def published(slug: str = "hello", **fields: Any) -> Post:
    return Post.objects.create(title=slug.title(), slug=slug, status=Post.PUBLISHED, **fields)


def draft(slug: str = "draft", **fields: Any) -> Post:
    return Post.objects.create(title=slug.title(), slug=slug, status=Post.DRAFT, **fields)


# Registration -----------------------------------------------------------------


def test_the_registration_api_lives_in_the_registry_module() -> None:
    assert indexnow_django.register is registry_module.register
    assert indexnow_django.ModelIndexNow is registry_module.ModelIndexNow
    # Still importable from the tracking module, where it used to live.
    assert tracking.register is registry_module.register
    assert tracking.get_registration is registry_module.get_registration


def test_indexnow_modules_are_discovered() -> None:
    assert isinstance(get_registration(Post), PostIndexNow)
    assert type(get_registration(Page)) is ModelIndexNow
    assert get_registration(Untracked) is None


def test_registering_a_model_twice_is_an_error() -> None:
    with pytest.raises(RegistrationError) as error:
        register(Post)
    assert str(error.value) == (
        "testapp.Post is already registered with IndexNow (by tests.testapp.indexnow.PostIndexNow)."
    )
    with pytest.raises(RegistrationError, match="already registered"):

        @register(Page)
        class Again(ModelIndexNow):
            pass

    assert isinstance(registry[Post], PostIndexNow)
    assert type(registry[Page]) is ModelIndexNow


@pytest.mark.parametrize(
    ("attrs", "message"),
    [
        ({"fields": "title"}, "fields must be a list of field names or None, not 'title'."),
        (
            {"publish_at": "title"},
            "publish_at must name a DateTimeField or DateField of testapp.Untracked, not 'title'.",
        ),
    ],
)
def test_invalid_options_are_a_clear_error(attrs: dict[str, Any], message: str) -> None:
    options = type("Broken", (ModelIndexNow,), attrs)
    with pytest.raises(RegistrationError) as error:
        register(Untracked, options)
    assert str(error.value) == f"Broken for testapp.Untracked: {message}"
    assert get_registration(Untracked) is None


def test_a_model_registered_after_the_app_is_ready_is_tracked(engine: Any) -> None:
    """What happens when another app registers a model from its own ready(), after ours."""

    @register(Untracked)
    class UntrackedIndexNow(ModelIndexNow):
        def urls(self, obj: Any) -> list[str]:
            return [f"/untracked/{obj.slug}/"]

    try:
        Untracked.objects.create(title="Late", slug="late")
    finally:
        unregister(Untracked)
    Untracked.objects.create(title="Not any more", slug="gone")
    assert sent(engine) == [[f"{BASE}/untracked/late/"]]


def test_a_save_base_patched_by_a_field_tracker_is_kept_and_sees_its_arguments(
    engine: Any,
) -> None:
    """A field tracker patches the class's ``save_base`` when the class is prepared,
    before tracking hooks it: its patch is called, with the keyword arguments it reads,
    and the save is tracked once."""
    seen: list[Any] = []
    original = Untracked.save_base

    def save_base(instance: Any, *args: Any, **kwargs: Any) -> Any:
        seen.append(kwargs.get("update_fields"))
        return original(instance, *args, **kwargs)

    Untracked.save_base = save_base  # type: ignore[method-assign]
    try:

        @register(Untracked)
        class UntrackedIndexNow(ModelIndexNow):
            def urls(self, obj: Any) -> list[str]:
                return [f"/untracked/{obj.slug}/"]

        try:
            obj = Untracked.objects.create(title="Tracked", slug="tracked")
            obj.title = "Tracked again"
            obj.save(update_fields=["title"])
        finally:
            unregister(Untracked)
        assert Untracked.save_base is save_base  # the patch, as it was
    finally:
        del Untracked.save_base
    assert seen == [None, frozenset({"title"})]
    assert sent(engine) == [[f"{BASE}/untracked/tracked/"], [f"{BASE}/untracked/tracked/"]]


def test_a_registration_while_the_site_runs_leaves_tracked_saves_hooked(engine: Any) -> None:
    """Tracking follows a registration made late (another app's ``ready()``, a model
    made at run time) without unhooking, even for a moment, the classes it tracked
    already: a save another thread makes meanwhile is tracked."""
    hooked = Page.save_base

    @register(Untracked)
    class UntrackedIndexNow(ModelIndexNow):
        pass

    try:
        assert Page.save_base is hooked
    finally:
        unregister(Untracked)
    assert Page.save_base is hooked
    assert getattr(Untracked.save_base, "indexnow_hook", False) is False  # let go
    Page.objects.create(path="/still-hooked/")
    assert sent(engine) == [[f"{BASE}/still-hooked/"]]


def test_muting_the_model_signals_does_not_pause_tracking(engine: Any) -> None:
    """factory_boy's ``mute_signals`` empties the signals' receivers: saves still count
    (tracking follows a save through its class; ``ENABLED`` pauses it)."""
    from django.db.models.signals import post_save, pre_save

    kept = [(signal, signal.receivers) for signal in (pre_save, post_save)]
    for signal, _receivers in kept:
        signal.receivers = []
        signal.sender_receivers_cache.clear()
    try:
        Page.objects.create(path="/muted/")
    finally:
        for signal, receivers in kept:
            signal.receivers = receivers
            signal.sender_receivers_cache.clear()
    assert sent(engine) == [[f"{BASE}/muted/"]]


def test_plain_register_uses_every_default(engine: Any) -> None:
    page = Page.objects.create(path="/about/")
    page.save()  # no change at all: every save of a default registration counts
    assert sent(engine) == [[f"{BASE}/about/"], [f"{BASE}/about/"]]


# The change table ---------------------------------------------------------------


def test_saved_public_object_sends_its_url(engine: Any) -> None:
    post = published("hello")
    post.body = "More words."
    post.save()
    assert sent(engine) == [[f"{BASE}/posts/hello/"], [f"{BASE}/posts/hello/"]]


def test_changed_slug_sends_old_and_new_urls(engine: Any) -> None:
    post = published("old-slug")
    engine.reset()
    post.slug = "new-slug"
    post.save()
    assert sent(engine) == [[f"{BASE}/posts/new-slug/", f"{BASE}/posts/old-slug/"]]


def test_unpublishing_sends_the_old_url(engine: Any) -> None:
    post = published("going")
    engine.reset()
    post.status = Post.DRAFT
    post.slug = "renamed-while-unpublished"
    post.save()
    assert sent(engine) == [[f"{BASE}/posts/going/"]]


def test_deleting_a_public_object_sends_its_url(engine: Any) -> None:
    post = published("bye")
    engine.reset()
    Post.objects.filter(pk=post.pk).delete()  # loaded afresh by the delete collector
    assert sent(engine) == [[f"{BASE}/posts/bye/"]]


def test_deleting_sends_the_stored_url_not_unsaved_edits(engine: Any) -> None:
    post = published("stored")
    engine.reset()
    post.slug = "edited-not-saved"
    post.delete()
    assert sent(engine) == [[f"{BASE}/posts/stored/"]]


def test_delete_computes_urls_while_the_rows_still_exist(
    engine: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    """urls() may follow relations that the delete removes (here the m2m rows)."""
    post = published("tagged-bye")
    post.tags.add(Tag.objects.create(name="news"))
    engine.reset()

    def with_tag_pages(obj: Any) -> list[str]:
        return [obj.get_absolute_url(), *(f"/tags/{tag.name}/" for tag in obj.tags.all())]

    monkeypatch.setattr(registry[Post], "urls", with_tag_pages)
    post.delete()
    assert sent(engine) == [[f"{BASE}/posts/tagged-bye/", f"{BASE}/tags/news/"]]


def test_drafts_never_send_anything(engine: Any) -> None:
    post = draft("secret")
    post.title = "Still secret"
    post.slug = "still-secret"
    post.save()
    post.delete()
    assert sent(engine) == []


def test_publishing_a_draft_sends_only_its_public_url(engine: Any) -> None:
    post = draft("draft-slug")
    post.slug = "public-slug"
    post.status = Post.PUBLISHED
    post.save()
    assert sent(engine) == [[f"{BASE}/posts/public-slug/"]]


def test_a_change_outside_fields_sends_nothing(engine: Any) -> None:
    post = published("counted")
    engine.reset()
    post.views += 1
    post.save()
    Post.objects.get(pk=post.pk).save(update_fields=["views"])
    assert sent(engine) == []
    post.title = "Counted, retitled"
    post.save()
    assert sent(engine) == [[f"{BASE}/posts/counted/"]]


def test_update_fields_limits_what_counts_as_changed(engine: Any) -> None:
    post = published("partial")
    engine.reset()
    post.title = "Changed in memory only"
    post.views = 3
    post.save(update_fields=["views"])
    assert sent(engine) == []


def test_published_with_a_future_publish_time_sends_nothing_now(engine: Any) -> None:
    published("later", published_at=timezone.now() + datetime.timedelta(hours=1))
    published("earlier", published_at=timezone.now() - datetime.timedelta(hours=1))
    assert sent(engine) == [[f"{BASE}/posts/earlier/"]]


def test_moving_the_publish_time_to_the_future_sends_the_old_url(engine: Any) -> None:
    post = published("embargoed")
    engine.reset()
    post.published_at = timezone.now() + datetime.timedelta(days=1)
    post.save()
    assert sent(engine) == [[f"{BASE}/posts/embargoed/"]]


@QUERIES_OF_THE_SAVE
def test_deferred_field_set_after_loading_still_knows_the_old_url(engine: Any) -> None:
    post = published("deferred")
    engine.reset()
    partial = Post.objects.only("title").get(pk=post.pk)
    partial.slug = "undeferred"
    with CaptureQueriesContext(connection) as queries:
        partial.save()
    assert sent(engine) == [[f"{BASE}/posts/undeferred/", f"{BASE}/posts/deferred/"]]
    # The old slug was unknown: one SELECT of just that column, then the UPDATE.
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["SELECT", "UPDATE"]


def test_overwriting_a_row_by_primary_key_knows_the_old_url(engine: Any) -> None:
    post = published("first")
    engine.reset()
    Post(pk=post.pk, title="Replaced", slug="replaced", status=Post.PUBLISHED).save()
    assert sent(engine) == [[f"{BASE}/posts/replaced/", f"{BASE}/posts/first/"]]


def test_a_json_value_changed_in_place_counts_as_a_change(engine: Any) -> None:
    document = Document.objects.create(name="spec", data={"sections": ["intro"]})
    engine.reset()
    document.name = "spec"
    document.save()
    assert sent(engine) == []
    document.data["sections"].append("details")
    document.save()
    assert sent(engine) == [[f"{BASE}/documents/spec/"]]
    loaded = Document.objects.get(pk=document.pk)
    loaded.data["sections"].pop()
    loaded.save()
    assert sent(engine)[1:] == [[f"{BASE}/documents/spec/"]]


# m2m ---------------------------------------------------------------------------


def test_m2m_changes_count_as_a_change_of_the_object(engine: Any) -> None:
    post = published("tagged")
    news, misc = Tag.objects.create(name="news"), Tag.objects.create(name="misc")
    engine.reset()
    post.tags.add(news)
    post.tags.add(news)  # already there: nothing changes
    post.tags.remove(news)
    post.tags.set([news, misc])
    post.tags.clear()
    url = f"{BASE}/posts/tagged/"
    assert sent(engine) == [[url], [url], [url], [url]]


def test_m2m_changes_from_the_other_side_count_too(engine: Any) -> None:
    post = published("from-the-tag")
    hidden = draft("hidden-draft")
    tag = Tag.objects.create(name="news")
    engine.reset()
    tag.post_set.add(post, hidden)
    tag.post_set.remove(post)
    tag.post_set.add(post)
    tag.post_set.clear()
    url = f"{BASE}/posts/from-the-tag/"
    assert sent(engine) == [[url], [url], [url], [url]]


def test_m2m_changes_of_a_draft_send_nothing(engine: Any) -> None:
    post = draft("tagged-draft")
    post.tags.add(Tag.objects.create(name="news"))
    assert sent(engine) == []


# Raw saves ----------------------------------------------------------------------


def test_loaddata_sends_nothing(engine: Any, tmp_path: Path) -> None:
    fixture = tmp_path / "posts.json"
    fixture.write_text(
        json.dumps(
            [
                {"model": "testapp.tag", "pk": 1, "fields": {"name": "news"}},
                {
                    "model": "testapp.post",
                    "pk": 1,
                    "fields": {
                        "title": "Loaded",
                        "slug": "loaded",
                        "status": "published",
                        "tags": [1],
                    },
                },
                {"model": "testapp.page", "pk": 1, "fields": {"path": "/loaded-page/"}},
            ]
        )
    )
    call_command("loaddata", str(fixture), verbosity=0)
    assert Post.objects.get(pk=1).tags.count() == 1
    assert sent(engine) == []


# Failures in the user's code ------------------------------------------------------


def test_raising_urls_never_breaks_the_save(
    engine: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    options = registry[Page]
    working_urls = options.urls

    def broken_urls(obj: Any) -> list[str]:
        if obj.path == "/broken/":
            raise ValueError("no URL for this one")
        return list(working_urls(obj))

    monkeypatch.setattr(options, "urls", broken_urls)
    with caplog.at_level(logging.ERROR, logger="indexnow_django"), batch():
        page = Page.objects.create(path="/broken/")
        Page.objects.create(path="/fine/")
    assert Page.objects.filter(pk=page.pk).exists()
    assert sent(engine) == [[f"{BASE}/fine/"]]
    [record] = [r for r in caplog.records if r.name == "indexnow_django.tracking"]
    assert record.getMessage() == (
        f"IndexNow could not work out the URLs of a save model=testapp.Page pk={page.pk}; "
        "nothing is submitted for this object"
    )
    assert record.exc_info is not None and record.exc_info[0] is ValueError


def test_raising_is_published_never_breaks_a_save_or_delete(
    engine: Any, caplog: pytest.LogCaptureFixture, monkeypatch: pytest.MonkeyPatch
) -> None:
    post = published("fragile")
    pk = post.pk
    engine.reset()

    def broken(obj: Any) -> bool:
        raise KeyError("status")

    monkeypatch.setattr(registry[Post], "is_published", broken)
    with caplog.at_level(logging.ERROR, logger="indexnow_django"):
        post.slug = "fragile-2"
        post.save()
        post.delete()
    assert not Post.objects.exists()
    assert sent(engine) == []
    messages = [r.getMessage() for r in caplog.records if r.name == "indexnow_django.tracking"]
    assert messages == [
        f"IndexNow could not work out the stored state before a save model=testapp.Post "
        f"pk={pk}; nothing is submitted for this object",
        f"IndexNow could not work out the URLs of a deleted object model=testapp.Post "
        f"pk={pk}; nothing is submitted for this object",
    ]


# Switched off and cost -------------------------------------------------------------


def test_disabled_collects_nothing(engine: Any, indexnow_settings: Any) -> None:
    indexnow_settings(ENABLED=False)
    with batch() as collector:
        post = published("off")
        post.slug = "still-off"
        post.save()
        post.tags.add(Tag.objects.create(name="news"))
        post.delete()
        assert collector.urls == {}
    assert sent(engine) == []


def test_a_tracked_save_costs_the_queries_of_an_untracked_one() -> None:
    published("costly")
    Untracked.objects.create(title="Costly", slug="costly")
    tracked = Post.objects.get(slug="costly")
    untracked = Untracked.objects.get(slug="costly")
    with batch():
        with CaptureQueriesContext(connection) as tracked_queries:
            tracked.slug = "cheaper"
            tracked.save()
        with CaptureQueriesContext(connection) as untracked_queries:
            untracked.slug = "cheaper"
            untracked.save()
    assert len(tracked_queries) == len(untracked_queries) == 1
    assert tracked_queries[0]["sql"].startswith("UPDATE")


# "Before" is the stored row -------------------------------------------------------------


def rebuilt(post: Post, **changes: Any) -> Post:
    """``post`` built again from its data, as a revision is: never loaded from the database."""
    data = {f.attname: getattr(post, f.attname) for f in Post._meta.concrete_fields}
    obj = Post(**{**data, **changes})
    obj._state.adding = False
    return obj


def test_an_object_rebuilt_from_its_data_is_compared_with_its_row(engine: Any) -> None:
    post = published("revision")
    engine.reset()
    rebuilt(post, slug="revised").save()
    assert sent(engine) == [[f"{BASE}/posts/revised/", f"{BASE}/posts/revision/"]]
    engine.reset()
    rebuilt(post, slug="revised", title="Edited in a revision").save()
    assert sent(engine) == [[f"{BASE}/posts/revised/"]]
    engine.reset()
    rebuilt(post, slug="revised", title="Edited in a revision").save()  # the same as its row
    assert sent(engine) == []


@QUERIES_OF_THE_SAVE
def test_a_rebuilt_object_costs_one_query_for_its_row(engine: Any) -> None:
    post = published("one-query")
    with CaptureQueriesContext(connection) as queries:
        rebuilt(post, title="Changed").save()
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["SELECT", "UPDATE"]


def test_a_refreshed_object_compares_with_the_refreshed_row(engine: Any) -> None:
    post = published("before-refresh")
    loaded = Post.objects.get(pk=post.pk)
    Post.objects.filter(pk=post.pk).update(slug="moved-elsewhere")  # no signal
    loaded.refresh_from_db()
    engine.reset()
    loaded.title = "Retitled"
    loaded.save()
    assert sent(engine) == [[f"{BASE}/posts/moved-elsewhere/"]]


@QUERIES_OF_THE_SAVE
def test_a_deferred_field_loaded_later_is_known(engine: Any) -> None:
    post = published("lazy")
    engine.reset()
    partial = Post.objects.defer("slug").get(pk=post.pk)
    assert partial.slug == "lazy"  # loaded now, by refresh_from_db
    partial.slug = "lazy-renamed"
    with CaptureQueriesContext(connection) as queries:
        partial.save()
    assert sent(engine) == [[f"{BASE}/posts/lazy-renamed/", f"{BASE}/posts/lazy/"]]
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["UPDATE"]


def test_a_tracked_model_loads_the_objects_django_itself_builds() -> None:
    """The loading hook stands in for Django's own ``from_db``: same objects, full or deferred."""
    post = published("same-object")
    django_from_db = Model.from_db.__func__  # type: ignore[attr-defined]
    for queryset in (Post.objects.all(), Post.objects.defer("body"), Post.objects.only("slug")):
        (loaded,) = queryset.filter(pk=post.pk)
        # The row in field order, or by attname if deferred, kept by reference.
        row = loaded.__dict__[LOADED]
        if isinstance(row, dict):
            names, values = list(row), list(row.values())
        else:
            names, values = [f.attname for f in Post._meta.concrete_fields], row
        # Django 6.1 also passes the queryset's fetch mode.
        options = {k: v for k, v in vars(loaded._state).items() if k == "fetch_mode"}
        built = django_from_db(Post, "default", names, values, **options)
        assert {k: v for k, v in vars(loaded).items() if k not in ("_state", LOADED)} == {
            k: v for k, v in vars(built).items() if k != "_state"
        }
        assert loaded.get_deferred_fields() == built.get_deferred_fields()
        state = vars(loaded._state)  # nothing of tracking's until a save
        assert state == vars(built._state)
        assert state["adding"] is False and state["db"] == "default"


@QUERIES_OF_THE_SAVE
def test_a_model_with_its_own_from_db_keeps_it_and_its_row_is_known(engine: Any) -> None:
    post = published("own-way")
    engine.reset()
    loaded = PostLoadedItsOwnWay.objects.get(pk=post.pk)
    assert loaded.loaded_by == "its own from_db"
    loaded.slug = "own-way-renamed"
    with CaptureQueriesContext(connection) as queries:
        loaded.save()
    assert [q["sql"].split()[0] for q in queries.captured_queries] == ["UPDATE"]
    assert sent(engine) == [[f"{BASE}/posts/own-way-renamed/", f"{BASE}/posts/own-way/"]]


def test_only_the_tracked_models_are_changed() -> None:
    assert Untracked.refresh_from_db is Model.refresh_from_db
    assert Untracked.from_db.__func__ is Model.from_db.__func__  # type: ignore[attr-defined]
    assert Post.refresh_from_db is not Model.refresh_from_db
    assert Post.from_db.__func__ is not Model.from_db.__func__  # type: ignore[attr-defined]


def test_a_copy_saved_as_a_new_row_leaves_the_original_its_own_row(engine: Any) -> None:
    import copy

    published("original")
    loaded = Post.objects.get(slug="original")
    clone = copy.copy(loaded)
    clone.pk = None
    clone._state.adding = True
    clone.slug = "clone"
    clone.save()
    engine.reset()
    loaded.slug = "original-renamed"
    loaded.save()
    assert sent(engine) == [[f"{BASE}/posts/original-renamed/", f"{BASE}/posts/original/"]]


# Subclasses -------------------------------------------------------------------------------


def test_a_multi_table_child_of_a_registered_model_is_tracked(engine: Any) -> None:
    featured = FeaturedPost.objects.create(
        title="Featured", slug="featured", status=Post.PUBLISHED, badge="new"
    )
    loaded = FeaturedPost.objects.get(pk=featured.pk)
    loaded.slug = "featured-2"
    loaded.save()
    loaded.delete()
    assert sent(engine) == [
        [f"{BASE}/posts/featured/"],
        [f"{BASE}/posts/featured-2/", f"{BASE}/posts/featured/"],
        [f"{BASE}/posts/featured-2/"],
    ]


def test_a_proxy_of_a_registered_model_is_tracked(engine: Any) -> None:
    post = published("proxied")
    engine.reset()
    proxy = PostProxy.objects.get(pk=post.pk)
    proxy.status = Post.DRAFT
    proxy.save()
    assert sent(engine) == [[f"{BASE}/posts/proxied/"]]


def test_a_subclass_with_its_own_registration_uses_it(engine: Any) -> None:
    @register(FeaturedPost)
    class FeaturedIndexNow(PostIndexNow):
        def urls(self, obj: Any) -> list[str]:
            return [f"/featured/{obj.slug}/"]

    try:
        FeaturedPost.objects.create(title="Own", slug="own", status=Post.PUBLISHED)
        published("plain")
    finally:
        unregister(FeaturedPost)
    FeaturedPost.objects.create(title="Back", slug="back", status=Post.PUBLISHED)
    assert sent(engine) == [
        [f"{BASE}/featured/own/"],
        [f"{BASE}/posts/plain/"],
        [f"{BASE}/posts/back/"],
    ]


def test_a_save_through_the_base_class_is_a_change_of_the_child(engine: Any) -> None:
    restaurant = Restaurant.objects.create(name="Chez Nous", slug="chez-nous")
    Place.objects.create(name="Just a place", slug="place")  # no child row: nothing
    place = Place.objects.get(pk=restaurant.pk)
    place.slug = "chez-vous"
    place.save()
    place.name = "Chez Vous"
    place.save(update_fields=["name"])
    assert isinstance(get_registration(Restaurant), RestaurantIndexNow)
    assert get_registration(Place) is None
    assert sent(engine) == [
        [f"{BASE}/restaurants/chez-nous/"],
        [f"{BASE}/restaurants/chez-vous/", f"{BASE}/restaurants/chez-nous/"],
        [f"{BASE}/restaurants/chez-vous/"],
    ]


@QUERIES_OF_THE_SAVE
def test_a_model_defined_after_start_up_inherits_the_registration(engine: Any) -> None:
    from django.apps import apps
    from django.db import connection as conn

    class LatePost(Post):
        class Meta:
            app_label = "testapp"

    try:
        with conn.schema_editor() as editor:
            editor.create_model(LatePost)
        LatePost.objects.create(title="Late", slug="late-child", status=Post.PUBLISHED)
        loaded = LatePost.objects.get(slug="late-child")
        loaded.slug = "late-child-2"
        with CaptureQueriesContext(connection) as queries:
            loaded.save()
        # Django's own: the parent's UPDATE, then a look for the child row (it has no
        # column to update); nothing for tracking, which knows the loaded values.
        assert [q["sql"].split()[0] for q in queries.captured_queries] == [
            "BEGIN",
            "UPDATE",
            "SELECT",
            "COMMIT",
        ]
        assert sent(engine) == [
            [f"{BASE}/posts/late-child/"],
            [f"{BASE}/posts/late-child-2/", f"{BASE}/posts/late-child/"],
        ]
    finally:
        with conn.schema_editor() as editor:
            editor.delete_model(LatePost)
        del apps.all_models["testapp"]["latepost"]
        apps.clear_cache()


# Public state and URLs always count ---------------------------------------------------------


@pytest.fixture
def sites() -> tuple[Site, Site]:
    return (
        Site.objects.create(domain="www.example.com", name="en"),
        Site.objects.create(domain="fr.example.com", name="fr"),
    )


def article(url: str, *on: Site, **fields: Any) -> Article:
    obj = Article.objects.create(url=url, **fields)
    obj.sites.set(on)
    return obj


def test_a_change_of_public_state_counts_whatever_fields_says(
    engine: Any, sites: tuple[Site, Site]
) -> None:
    en, _fr = sites
    page = article("/about/", en)
    engine.reset()
    page.edited_by = "someone"  # not in fields, changes nothing public
    page.save()
    assert sent(engine) == []
    page.hidden = True  # not in fields either, but unpublishes
    page.save()
    assert sent(engine) == [[f"{BASE}/en/about/"]]
    page.hidden = False
    page.save()
    assert sent(engine)[1:] == [[f"{BASE}/en/about/"]]


def test_a_change_of_publish_time_counts_whatever_fields_says(engine: Any) -> None:
    class NarrowIndexNow(PostIndexNow):
        fields = ["title"]

    unregister(Post)
    register(Post, NarrowIndexNow)
    try:
        post = published("timed", published_at=timezone.now() - datetime.timedelta(hours=1))
        engine.reset()
        post.published_at = timezone.now() + datetime.timedelta(days=1)
        post.save()
    finally:
        unregister(Post)
        register(Post, PostIndexNow)
    assert sent(engine) == [[f"{BASE}/posts/timed/"]]


# Many-to-many: before and after -----------------------------------------------------------


def test_removing_a_relation_sends_the_url_that_disappeared(
    engine: Any, sites: tuple[Site, Site]
) -> None:
    en, fr = sites
    page = article("/contact/", en, fr)
    engine.reset()
    page.sites.remove(fr)
    assert sent(engine) == [[f"{BASE}/en/contact/", f"{BASE}/fr/contact/"]]
    engine.reset()
    fr.article_set.add(page)  # from the other side
    assert sent(engine) == [[f"{BASE}/en/contact/", f"{BASE}/fr/contact/"]]
    engine.reset()
    fr.article_set.clear()
    assert sent(engine) == [[f"{BASE}/en/contact/", f"{BASE}/fr/contact/"]]
    engine.reset()
    page.sites.clear()
    assert sent(engine) == [[f"{BASE}/en/contact/"]]


def test_a_url_change_with_a_relation_change_sends_only_urls_that_existed(
    engine: Any, sites: tuple[Site, Site]
) -> None:
    """What the admin does: save the object, then its m2m fields, in one transaction."""
    en, fr = sites
    page = article("/old/", en, fr)
    engine.reset()
    with transaction.atomic():
        page.url = "/new/"
        page.save()
        page.sites.set([en])
    assert sent(engine) == [[f"{BASE}/en/new/", f"{BASE}/en/old/", f"{BASE}/fr/old/"]]


def test_a_rolled_back_change_inside_a_transaction_sends_nothing(
    engine: Any, sites: tuple[Site, Site]
) -> None:
    en, fr = sites
    page = article("/kept/", en)
    engine.reset()
    with transaction.atomic():
        with transaction.atomic():
            page.url = "/dropped/"
            page.save()
            transaction.set_rollback(True)
        fresh = Article.objects.get(pk=page.pk)
        fresh.sites.add(fr)
    assert sent(engine) == [[f"{BASE}/en/kept/", f"{BASE}/fr/kept/"]]


def test_a_long_transaction_keeps_a_few_objects_a_save_until_its_commit(engine: Any) -> None:
    """A bulk import saving many objects in one transaction holds, until the commit, what
    the commit works their URLs out from and little more: each object kept costs memory
    and the collector's time (every collection walks it) for the rest of the import."""
    import gc

    Post.objects.bulk_create(
        Post(title=f"Post {n}", slug=f"kept-{n}", status=Post.PUBLISHED) for n in range(400)
    )

    def kept_by(count: int) -> int:
        """Objects the collector tracks, more after ``count`` saves than before them."""
        posts = list(Post.objects.filter(slug__startswith="kept-")[:count])
        gc.collect()
        gc.disable()
        try:
            with transaction.atomic():
                before = len(gc.get_objects())
                for post in posts:
                    post.title += " (imported)"
                    post.save()
                return len(gc.get_objects()) - before
        finally:
            gc.enable()

    kept_by(100)  # what a first transaction loads once (the URLconf, say) is not counted
    engine.reset()
    kept = (kept_by(400) - kept_by(100)) / 300
    assert kept <= 7, f"{kept:.1f} objects kept a save until the commit"
    assert len(sent(engine)) == 2
    assert sorted(sent(engine)[0]) == sorted(f"{BASE}/posts/kept-{n}/" for n in range(400))


# Saves worked out at the end of their unit --------------------------------------


def test_an_edit_made_after_a_save_in_the_same_unit_is_not_what_is_submitted(
    engine: Any,
) -> None:
    post = published("before")
    engine.reset()
    loaded = Post.objects.get(pk=post.pk)
    with batch():
        loaded.slug = "saved"
        loaded.save()
        loaded.slug = "edited-but-never-saved"
    assert sent(engine) == [[f"{BASE}/posts/saved/", f"{BASE}/posts/before/"]]


@pytest.mark.slow
def test_a_long_loop_of_saves_in_one_unit_gives_one_flush_of_every_url(engine: Any) -> None:
    from indexnow_django.units import collector as collector_module

    Post.objects.bulk_create(
        Post(title=f"P{n}", slug=f"p{n}", status=Post.PUBLISHED) for n in range(1200)
    )
    engine.reset()
    with batch() as unit:
        for post in Post.objects.order_by("pk"):
            post.slug = f"new-{post.slug}"
            post.save()
            # What waits to be worked out stays bounded, whatever the loop's length.
            assert len(unit.waiting) < collector_module.LATER_LIMIT
    [urls] = sent(engine)
    assert len(urls) == 2400
    assert set(urls) == {f"{BASE}/posts/new-p{n}/" for n in range(1200)} | {
        f"{BASE}/posts/p{n}/" for n in range(1200)
    }


def test_an_inherited_m2m_field_changed_from_the_other_side_counts_for_the_child(
    engine: Any,
) -> None:
    """``Place.tags`` belongs to the unregistered parent; ``Restaurant`` lists it."""
    restaurant = Restaurant.objects.create(name="Chez Nous", slug="chez-nous")
    place = Place.objects.create(name="Just a place", slug="place")
    tag = Tag.objects.create(name="cosy")
    engine.reset()
    tag.places.add(Place.objects.get(pk=restaurant.pk), place)
    assert sent(engine) == [[f"{BASE}/restaurants/chez-nous/"]]
    tag.places.remove(place)  # no child row: nothing
    tag.places.clear()
    assert sent(engine)[1:] == [[f"{BASE}/restaurants/chez-nous/"]]


# Savepoints ---------------------------------------------------------------------------------


class Boom(Exception):
    pass


def rename_then_roll_back_a_rename(post: Post, using: str) -> None:
    """A rename that commits, then one in a savepoint that rolls back, in one transaction."""
    with transaction.atomic(using=using):
        post.slug = "x-kept"
        post.save(using=using)
        try:
            with transaction.atomic(using=using):
                post.slug = "x-ghost"
                post.save(using=using)
                raise Boom
        except Boom:
            pass


@pytest.mark.django_db(transaction=True, databases=["default", "other"])
@pytest.mark.parametrize("using", ["default", "other"])
def test_a_rolled_back_savepoint_leaves_no_trace(engine: Any, using: str) -> None:
    post = Post(title="X", slug="x", status=Post.PUBLISHED)
    post.save(using=using)
    engine.reset()
    rename_then_roll_back_a_rename(post, using)
    assert Post.objects.using(using).get(pk=post.pk).slug == "x-kept"
    assert sent(engine) == [[f"{BASE}/posts/x-kept/", f"{BASE}/posts/x/"]]
    # Nor does the "before" it recorded: the next rename compares with the committed row.
    engine.reset()
    post.slug = "y"
    post.save(using=using)
    assert sent(engine) == [[f"{BASE}/posts/y/", f"{BASE}/posts/x-kept/"]]


@pytest.mark.django_db(transaction=True, databases=["default", "other"])
def test_a_save_rolled_back_with_its_savepoint_first_leaves_no_trace(engine: Any) -> None:
    post = published("first")
    engine.reset()
    with transaction.atomic():
        try:
            with transaction.atomic():
                post.slug = "first-ghost"
                post.save()
                raise Boom
        except Boom:
            pass
        post.title = "Retitled"
        post.save()  # the row still holds "first"
    assert Post.objects.get(pk=post.pk).slug == "first-ghost"  # the instance kept its edit
    assert sent(engine) == [[f"{BASE}/posts/first-ghost/", f"{BASE}/posts/first/"]]


def test_saves_before_and_after_a_rolled_back_savepoint_both_count(engine: Any) -> None:
    """The saves of one transaction around a savepoint that rolls back: the two that
    stand are sent together at the commit, the one rolled back is not."""
    first, ghost, last = published("first"), published("ghost"), published("last")
    engine.reset()
    with transaction.atomic():
        first.title = "First retitled"
        first.save()
        try:
            with transaction.atomic():
                ghost.title = "Ghost retitled"
                ghost.save()
                raise Boom
        except Boom:
            pass
        last.title = "Last retitled"
        last.save()
        assert sent(engine) == []
    assert sent(engine) == [[f"{BASE}/posts/first/", f"{BASE}/posts/last/"]]
    assert Post.objects.get(pk=ghost.pk).title == "Ghost"


def test_a_rolled_back_savepoint_in_an_atomic_request_leaves_no_trace(
    engine: Any, client: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    post = published("x")
    engine.reset()
    monkeypatch.setitem(connection.settings_dict, "ATOMIC_REQUESTS", True)
    response = client.get(f"/posts/{post.pk}/rename-twice/")
    assert response.status_code == 200
    assert Post.objects.get(pk=post.pk).slug == "x-kept"
    assert sent(engine) == [[f"{BASE}/posts/x-kept/", f"{BASE}/posts/x/"]]


# What the URLs are read from: url_fields --------------------------------------------


class PostURLsFromSlug(PostIndexNow):
    """``urls()`` (``get_absolute_url``) reads the slug, ``is_published()`` the status."""

    url_fields = ["slug", "status"]


@pytest.fixture
def urls_from_slug() -> Any:
    unregister(Post)
    register(Post, PostURLsFromSlug)
    try:
        yield
    finally:
        unregister(Post)
        register(Post, PostIndexNow)


@pytest.fixture
def objects_built() -> Any:
    """The ``Post`` objects built (loaded, or built by tracking to compare) from now on."""
    built: list[Post] = []

    def count(sender: Any, instance: Post, **kwargs: Any) -> None:
        built.append(instance)

    post_init.connect(count, sender=Post, weak=False, dispatch_uid="test-objects-built")
    try:
        yield built
    finally:
        post_init.disconnect(sender=Post, dispatch_uid="test-objects-built")


@pytest.mark.usefixtures("urls_from_slug")
def test_a_save_that_changes_no_field_its_urls_read_builds_no_object(
    engine: Any, objects_built: list[Post]
) -> None:
    published("counted")
    posts = list(Post.objects.all())
    engine.reset()
    del objects_built[:]
    posts[0].views += 1
    posts[0].save()  # no field of fields: nothing
    with transaction.atomic():
        posts[0].title = "Retitled"
        posts[0].save()  # a field of fields: its URL, as it was
    with batch():
        posts[0].body = "Rewritten"
        posts[0].save()
    assert objects_built == []
    assert sent(engine) == [[f"{BASE}/posts/counted/"], [f"{BASE}/posts/counted/"]]


@pytest.mark.usefixtures("urls_from_slug")
def test_a_url_field_changed_after_another_save_in_a_transaction_sends_old_and_new(
    engine: Any,
) -> None:
    post = published("first")
    engine.reset()
    with transaction.atomic():
        post.title = "Retitled"
        post.save()
        post.slug = "second"
        post.save()
    with transaction.atomic():
        post.title = "Retitled again"
        post.save()
        post.status = Post.DRAFT
        post.save()
    assert sent(engine) == [
        [f"{BASE}/posts/second/", f"{BASE}/posts/first/"],
        [f"{BASE}/posts/second/"],
    ]


def test_url_fields_must_name_fields_of_the_model() -> None:
    options = type("Broken", (ModelIndexNow,), {"url_fields": ["slug", "nope"]})
    with pytest.raises(RegistrationError) as error:
        register(Untracked, options)
    assert str(error.value) == (
        "Broken for testapp.Untracked: url_fields names 'nope', which is not a field of "
        "testapp.Untracked."
    )
    assert get_registration(Untracked) is None
