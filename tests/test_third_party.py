"""Tracking on the apps Django sites are built from, as docs/third-party.md shows them:
real django-parler, django-taggit, django-treebeard and django-mptt, through their
admin where they have one, asserting the URLs the loopback engine received.

Outside any unit of work each commit flushes its own URLs, and these tests send
at once, in process, to the loopback engine (``AT_ONCE``), so every flush is one POST. Debouncing
is off, so that a URL sent twice shows twice.
"""

from __future__ import annotations

import contextlib
import io
from typing import Any

import pytest
from django.db import transaction

from tests.needs import AT_ONCE
from tests.thirdparty.models import Lesson, Note

pytestmark = [
    pytest.mark.django_db(transaction=True),
    pytest.mark.indexnow(**AT_ONCE, DEBOUNCE={"TTL": 0}),
]

BASE = "https://www.example.com"


def sent(engine: Any) -> list[list[str]]:
    """The URL list of every POST the engine received, in order."""
    return [post.urls for post in engine.posts]


# "Before" is built as Django builds an object ---------------------------------------


@pytest.mark.parametrize("in_a_transaction", [False, True], ids=["autocommit", "atomic"])
def test_a_model_whose_init_sets_what_urls_reads(engine: Any, in_a_transaction: bool) -> None:
    lesson = Lesson.objects.create(slug="first")
    assert sent(engine) == [[f"{BASE}/lessons/first/"]]
    engine.reset()
    with transaction.atomic() if in_a_transaction else contextlib.nullcontext():
        lesson = Lesson.objects.get(pk=lesson.pk)
        lesson.slug = "renamed"
        lesson.save()
    assert sent(engine) == [[f"{BASE}/lessons/renamed/", f"{BASE}/lessons/first/"]]
    engine.reset()
    # Never loaded: built by hand with the primary key of its row.
    Lesson(pk=lesson.pk, slug="by-hand").save()
    assert sent(engine) == [[f"{BASE}/lessons/by-hand/", f"{BASE}/lessons/renamed/"]]
    engine.reset()
    lesson = Lesson.objects.get(pk=lesson.pk)
    lesson.delete()
    assert sent(engine) == [[f"{BASE}/lessons/by-hand/"]]


# django-taggit -------------------------------------------------------------------------


NOTE = f"{BASE}/notes/tagged/"


def tagged_note(*tags: str) -> Note:
    """A note, with ``tags``; the tags python, django and web exist (a new tag submits its
    own page, as taggit's ``Tag`` is registered)."""
    from taggit.models import Tag

    for name in ("python", "django", "web"):
        Tag.objects.get_or_create(name=name, slug=name)
    note = Note.objects.create(slug="tagged")
    note.tags.add(*tags)
    return note


def test_adding_and_removing_a_tag_submits_the_note_and_the_tag_page(engine: Any) -> None:
    note = tagged_note()
    engine.reset()
    note.tags.add("python")
    assert sent(engine) == [[NOTE, f"{BASE}/tags/python/"]]
    engine.reset()
    note.tags.add("django")
    assert sent(engine) == [[NOTE, f"{BASE}/tags/django/", f"{BASE}/tags/python/"]]
    engine.reset()
    note.tags.remove("python")
    assert sent(engine) == [[NOTE, f"{BASE}/tags/django/", f"{BASE}/tags/python/"]]
    engine.reset()
    note.tags.clear()
    assert sent(engine) == [[NOTE, f"{BASE}/tags/django/"]]


def test_the_admins_tag_field_submits_the_tags_it_changed(engine: Any, admin_client: Any) -> None:
    note = tagged_note("python")
    engine.reset()
    response = admin_client.post(
        f"/admin/thirdparty/note/{note.pk}/change/",
        {"slug": "tagged", "tags": "django, web", "_save": "Save"},
    )
    assert response.status_code == 302, response.content.decode()[-2000:]
    assert sorted(note.tags.names()) == ["django", "web"]
    [urls] = sent(engine)
    assert sorted(urls) == sorted(
        [NOTE, f"{BASE}/tags/django/", f"{BASE}/tags/web/", f"{BASE}/tags/python/"]
    )


def test_a_tag_rename_submits_its_old_and_new_page(engine: Any) -> None:
    from taggit.models import Tag

    note = tagged_note()
    note.tags.add("pyhton")
    engine.reset()
    tag = Tag.objects.get(name="pyhton")
    tag.name, tag.slug = "snake", "snake"
    tag.save()
    assert sent(engine) == [[f"{BASE}/tags/snake/", f"{BASE}/tags/pyhton/"]]


def test_a_name_in_fields_that_is_no_field_is_a_system_check_error() -> None:
    from django.core import checks

    from indexnow_django import ModelIndexNow, register
    from indexnow_django.registration.registry import check_registrations, unregister
    from tests.testapp.models import Untracked

    class UntrackedIndexNow(ModelIndexNow):
        fields = ["title", "titel", "tags"]

    register(Untracked, UntrackedIndexNow)
    try:
        errors = check_registrations()
        assert errors == [
            checks.Error(
                f"UntrackedIndexNow for testapp.Untracked: fields names {name!r}, which is not "
                "a field of testapp.Untracked that IndexNow tracks.",
                hint=(
                    "fields lists the model's own fields and many-to-many relations; for rows "
                    "of another model that belong to the object (a reverse relation, "
                    "translations, inline rows) use related = [...]."
                ),
                obj=UntrackedIndexNow,
                id="indexnow.E031",
            )
            for name in ("titel", "tags")
        ]
        assert [e.id for e in checks.run_checks(tags=[checks.Tags.models])].count(
            "indexnow.E031"
        ) == 2
    finally:
        unregister(Untracked)
    assert check_registrations() == []


# django-parler --------------------------------------------------------------------------


def guide_form(**fields: str) -> dict[str, str]:
    return {"status": "published", "_save": "Save", **fields}


def test_parler_publish_a_french_only_edit_and_a_french_slug_change(
    engine: Any, admin_client: Any
) -> None:
    from tests.thirdparty.models import Guide

    response = admin_client.post(
        "/admin/thirdparty/guide/add/?language=en", guide_form(title="Guide", slug="guide")
    )
    assert response.status_code == 302, response.content.decode()[-3000:]
    guide = Guide.objects.get()
    assert sent(engine) == [[f"{BASE}/en/guides/guide/"]]
    engine.reset()
    change = f"/admin/thirdparty/guide/{guide.pk}/change/?language=fr"
    response = admin_client.post(change, guide_form(title="Le guide", slug="le-guide"))
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert sent(engine) == [[f"{BASE}/en/guides/guide/", f"{BASE}/fr/guides/le-guide/"]]
    engine.reset()
    response = admin_client.post(change, guide_form(title="Le guide", slug="guide-fr"))
    assert response.status_code == 302
    assert sent(engine) == [
        [f"{BASE}/en/guides/guide/", f"{BASE}/fr/guides/guide-fr/", f"{BASE}/fr/guides/le-guide/"]
    ]
    engine.reset()
    # A French edit of nothing fields lists (the status only is in the master row).
    response = admin_client.post(change, guide_form(title="Le guide", slug="guide-fr"))
    assert response.status_code == 302
    assert sent(engine) == []


def test_parler_in_code_inside_and_outside_a_transaction(engine: Any) -> None:
    from tests.thirdparty.models import Guide

    guide = Guide.objects.language("en").create(title="Code", slug="code")
    engine.reset()
    for atomic in (True, False):
        with transaction.atomic() if atomic else contextlib.nullcontext():
            guide = Guide.objects.get(pk=guide.pk)
            guide.set_current_language("fr")
            guide.title, guide.slug = "Le code", f"le-code-{atomic}"
            guide.save()
    assert sent(engine) == [
        [f"{BASE}/en/guides/code/", f"{BASE}/fr/guides/le-code-True/"],
        [
            f"{BASE}/en/guides/code/",
            f"{BASE}/fr/guides/le-code-False/",
            f"{BASE}/fr/guides/le-code-True/",
        ],
    ]
    engine.reset()
    Guide.objects.get(pk=guide.pk).translations.filter(language_code="fr").delete()
    assert sent(engine) == [[f"{BASE}/en/guides/code/", f"{BASE}/fr/guides/le-code-False/"]]
    engine.reset()
    Guide.objects.get(pk=guide.pk).delete()
    assert sent(engine) == [[f"{BASE}/en/guides/code/"]]


# Rows that belong to an object -------------------------------------------------------------


def test_a_row_that_belongs_to_an_object_submits_it(engine: Any, admin_client: Any) -> None:
    from tests.thirdparty.models import Step

    lesson = Lesson.objects.create(slug="steps")
    engine.reset()
    step = Step.objects.create(lesson=lesson, text="One")
    assert sent(engine) == [[f"{BASE}/lessons/steps/"]]
    engine.reset()
    step.delete()
    assert sent(engine) == [[f"{BASE}/lessons/steps/"]]
    engine.reset()
    # An inline in the admin, with the lesson saved as it was: one flush of its URL.
    response = admin_client.post(
        f"/admin/thirdparty/lesson/{lesson.pk}/change/",
        {
            "slug": "steps",
            "steps-TOTAL_FORMS": "1",
            "steps-INITIAL_FORMS": "0",
            "steps-0-text": "Added inline",
            "_save": "Save",
        },
    )
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert Step.objects.get().text == "Added inline"
    assert sent(engine) == [[f"{BASE}/lessons/steps/"]]


def test_a_name_in_related_that_tracking_cannot_follow_is_a_system_check_warning() -> None:
    from django.core import checks

    from indexnow_django import ModelIndexNow, register
    from indexnow_django.registration.registry import check_registrations, unregister
    from tests.testapp.models import Untracked

    class UntrackedIndexNow(ModelIndexNow):
        related = ["title", "comments"]

    register(Untracked, UntrackedIndexNow)
    try:
        found = check_registrations()
        assert [(type(e), e.id, e.msg) for e in found] == [
            (
                checks.Warning,
                "indexnow.W031",
                f"UntrackedIndexNow for testapp.Untracked: related names {name!r}, which "
                "IndexNow cannot follow: it is not a reverse relation or a generic relation "
                "of testapp.Untracked. Saving or deleting its rows submits nothing.",
            )
            for name in ("title", "comments")
        ]
        # A warning: commands (migrate, rqworker...) still run.
        assert not [e for e in found if e.is_serious()]
    finally:
        unregister(Untracked)


# Generic relations ---------------------------------------------------------------------------


def test_a_generic_relation_in_related_passes_the_check() -> None:
    from django.core import checks

    messages = [
        e for e in checks.run_checks(tags=[checks.Tags.models]) if e.id.startswith("indexnow.")
    ]
    assert messages == []


def test_a_comment_added_edited_and_deleted_submits_its_article(engine: Any) -> None:
    from tests.thirdparty.models import Article, Comment

    article = Article.objects.create(slug="commented")
    other = Article.objects.create(slug="other")
    engine.reset()
    comment = article.comments.create(text="First!")
    assert sent(engine) == [[f"{BASE}/articles/commented/"]]
    engine.reset()
    comment.text = "First, edited"
    comment.save()
    assert sent(engine) == [[f"{BASE}/articles/commented/"]]
    engine.reset()
    comment.delete()
    assert sent(engine) == [[f"{BASE}/articles/commented/"]]
    engine.reset()
    # A comment on an object of another model with the same primary key is not the article's.
    from tests.thirdparty.models import Story

    story = Story.objects.create(title="Story", slug="story")
    story.pk = other.pk
    story.save()
    engine.reset()
    Comment.objects.create(target=story, text="On the story")
    assert sent(engine) == []


# Trees: dependents() and watch() ---------------------------------------------------------


def section_tree() -> Any:
    """/sections/cat/guides/python/django/ and /sections/cat/other/."""
    from tests.thirdparty.models import Section

    cat = Section.add_root(slug="cat")
    guides = cat.add_child(slug="guides")
    python = Section.objects.get(pk=guides.pk).add_child(slug="python")
    Section.objects.get(pk=python.pk).add_child(slug="django")
    Section.objects.get(pk=cat.pk).add_child(slug="other")
    return Section


def test_treebeard_a_parent_rename_submits_its_descendants_old_and_new(engine: Any) -> None:
    from indexnow_django import batch

    Section = section_tree()
    engine.reset()
    guides = Section.objects.get(slug="guides")
    with batch():
        guides.slug = "howtos"
        guides.save()
    [urls] = sent(engine)
    assert sorted(urls) == sorted(
        f"{BASE}/sections/cat/{path}"
        for path in (
            "howtos/",
            "guides/",
            "howtos/python/",
            "guides/python/",
            "howtos/python/django/",
            "guides/python/django/",
        )
    )


def test_treebeard_a_subtree_move_inside_watch(engine: Any) -> None:
    import indexnow_django

    Section = section_tree()
    engine.reset()
    python = Section.objects.get(slug="python")
    other = Section.objects.get(slug="other")
    with transaction.atomic(), indexnow_django.watch([python, *python.get_descendants()]):
        python.move(other, "last-child")
    [urls] = sent(engine)
    assert sorted(urls) == sorted(
        f"{BASE}/sections/cat/{path}"
        for path in (
            "other/python/",
            "guides/python/",
            "other/python/django/",
            "guides/python/django/",
        )
    )
    engine.reset()
    with indexnow_django.watch(Section.objects.all()):
        pass  # nothing moved
    assert sent(engine) == []


def topic_tree() -> Any:
    from tests.thirdparty.models import Topic

    cat = Topic.objects.create(slug="cat")
    guides = Topic.objects.create(slug="guides", parent=cat)
    python = Topic.objects.create(slug="python", parent=guides)
    Topic.objects.create(slug="django", parent=python)
    Topic.objects.create(slug="other", parent=Topic.objects.get(pk=cat.pk))
    return Topic


def test_mptt_a_parent_rename_and_a_subtree_move(engine: Any) -> None:
    import indexnow_django

    Topic = topic_tree()
    engine.reset()
    guides = Topic.objects.get(slug="guides")
    with indexnow_django.batch():
        guides.slug = "howtos"
        guides.save()
    [urls] = sent(engine)
    assert sorted(urls) == sorted(
        f"{BASE}/topics/cat/{path}"
        for path in (
            "howtos/",
            "guides/",
            "howtos/python/",
            "guides/python/",
            "howtos/python/django/",
            "guides/python/django/",
        )
    )
    engine.reset()
    python = Topic.objects.get(slug="python")
    with indexnow_django.watch(python.get_descendants(include_self=True)):
        python.move_to(Topic.objects.get(slug="other"), "last-child")
    [urls] = sent(engine)
    assert sorted(urls) == sorted(
        f"{BASE}/topics/cat/{path}"
        for path in (
            "other/python/",
            "howtos/python/",
            "other/python/django/",
            "howtos/python/django/",
        )
    )


# django-import-export ------------------------------------------------------------------


@pytest.mark.parametrize("use_bulk", [False, True], ids=["saves", "bulk"])
def test_an_import_submits_what_it_created_and_changed_once(engine: Any, use_bulk: bool) -> None:
    import tablib
    from import_export import resources

    from indexnow_django import batch

    class LessonResource(resources.ModelResource):
        class Meta:
            model = Lesson
            fields = ("id", "slug")

    LessonResource._meta.use_bulk = use_bulk
    existing = Lesson.objects.create(slug="old")
    engine.reset()
    dataset = tablib.Dataset(headers=["id", "slug"])
    dataset.append([existing.pk, "renamed"])
    dataset.append(["", "imported"])
    # A dry run (the admin's preview) rolls back: nothing is submitted.
    result = LessonResource().import_data(dataset, dry_run=True)
    assert not result.has_errors()
    assert sent(engine) == []
    with batch():  # as the admin's import request is one unit of work
        result = LessonResource().import_data(dataset, dry_run=False)
    assert not result.has_errors()
    assert Lesson.objects.get(pk=existing.pk).slug == "renamed"
    [urls] = sent(engine)
    assert sorted(urls) == sorted(
        [f"{BASE}/lessons/renamed/", f"{BASE}/lessons/old/", f"{BASE}/lessons/imported/"]
    )


def test_treebeard_admin_a_rename_and_a_move(engine: Any, admin_client: Any) -> None:
    Section = section_tree()
    engine.reset()
    cat, guides = Section.objects.get(slug="cat"), Section.objects.get(slug="guides")
    change = f"/admin/thirdparty/section/{guides.pk}/change/"
    form = {"slug": "howtos", "treebeard_position": "first-child", "_save": "Save"}
    response = admin_client.post(change, {**form, "treebeard_ref_node": cat.pk})
    assert response.status_code == 302, response.content.decode()[-3000:]
    [urls] = sent(engine)
    assert sorted(urls) == sorted(
        f"{BASE}/sections/cat/{path}"
        for path in (
            "howtos/",
            "guides/",
            "howtos/python/",
            "guides/python/",
            "howtos/python/django/",
            "guides/python/django/",
        )
    )
    engine.reset()
    other = Section.objects.get(slug="other")
    response = admin_client.post(change, {**form, "treebeard_ref_node": other.pk})
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert Section.objects.get(pk=guides.pk).get_parent().slug == "other"
    [urls] = sent(engine)
    assert sorted(urls) == sorted(
        f"{BASE}/sections/cat/{path}"
        for path in (
            "other/howtos/",
            "howtos/",
            "other/howtos/python/",
            "howtos/python/",
            "other/howtos/python/django/",
            "howtos/python/django/",
        )
    )


# django-reversion ------------------------------------------------------------------------

STORY = f"{BASE}/stories"


def story_with_two_revisions() -> Any:
    """A story saved as "first", then renamed "second", each in a revision of its own."""
    import reversion

    from tests.thirdparty.models import Story

    with reversion.create_revision():
        story = Story.objects.create(title="Story", slug="first")
    with reversion.create_revision():
        story.slug = "second"
        story.save()
    return story


def test_reversion_admin_revert_submits_the_old_and_the_new_url(
    engine: Any, admin_client: Any
) -> None:
    from reversion.models import Version

    from tests.thirdparty.models import Story

    story = story_with_two_revisions()
    engine.reset()
    first = Version.objects.get_for_object(story)[1]
    # The revision's form, as the admin shows it, then saved.
    page = admin_client.get(f"/admin/thirdparty/story/{story.pk}/history/{first.pk}/")
    assert page.status_code == 200
    assert Story.objects.get().slug == "second"  # showing the form reverts nothing
    assert sent(engine) == []
    response = admin_client.post(
        f"/admin/thirdparty/story/{story.pk}/history/{first.pk}/",
        {"title": "Story", "slug": "first", "_save": "Save"},
    )
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert Story.objects.get().slug == "first"
    assert sent(engine) == [[f"{STORY}/first/", f"{STORY}/second/"]]


def test_reversion_version_revert_in_a_command(engine: Any) -> None:
    from django.core.management import call_command

    story = story_with_two_revisions()
    engine.reset()
    out = io.StringIO()
    call_command("revert_story", story.pk, stdout=out)
    assert out.getvalue() == "reverted first\n"
    assert sent(engine) == [[f"{STORY}/first/", f"{STORY}/second/"]]


def test_reversion_admin_recover_submits_the_url_of_the_deleted_object(
    engine: Any, admin_client: Any
) -> None:
    from reversion.models import Version

    from tests.thirdparty.models import Story

    story = story_with_two_revisions()
    story.delete()
    engine.reset()
    [deleted] = Version.objects.get_deleted(Story)
    response = admin_client.post(
        f"/admin/thirdparty/story/recover/{deleted.pk}/",
        {"title": "Story", "slug": "second", "_save": "Save"},
    )
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert Story.objects.get().slug == "second"
    assert sent(engine) == [[f"{STORY}/second/"]]


def test_loaddata_of_the_same_object_submits_nothing(engine: Any, tmp_path: Any) -> None:
    from django.core.management import call_command

    from tests.thirdparty.models import Story

    story = story_with_two_revisions()
    fixture = tmp_path / "stories.json"
    call_command("dumpdata", "thirdparty.story", output=str(fixture))
    story.slug = "third"
    story.save()
    engine.reset()
    call_command("loaddata", str(fixture), verbosity=0)
    assert Story.objects.get().slug == "second"
    assert sent(engine) == []


def story_saved_then_edited() -> str:
    """A story saved as "kept", serialized, then renamed "edited": the serialized data."""
    from django.core import serializers

    from tests.thirdparty.models import Story

    story = Story.objects.create(title="Story", slug="kept")
    data = serializers.serialize("json", [story])
    story.slug = "edited"
    story.save()
    return data


def test_count_raw_saves_tracks_another_deserializer(engine: Any) -> None:
    from django.core import serializers

    import indexnow_django

    data = story_saved_then_edited()
    engine.reset()
    with indexnow_django.count_raw_saves():
        for restored in serializers.deserialize("json", data):
            restored.save()
    assert sent(engine) == [[f"{STORY}/kept/", f"{STORY}/edited/"]]
    engine.reset()
    for restored in serializers.deserialize("json", data):
        restored.save()  # outside the block, a raw save as loaddata makes: nothing
    assert sent(engine) == []


# django-polymorphic and multi-table inheritance ------------------------------------------

BOOK = f"{BASE}/books/p1-dune-novel/"


def test_polymorphic_create_edit_delete_through_the_base_queryset(engine: Any) -> None:
    from tests.thirdparty.models import Book, Product

    book = Book.objects.create(slug="p1-dune", author="Herbert")
    assert sent(engine) == [[f"{BASE}/books/p1-dune/"]]
    engine.reset()
    loaded = Product.objects.get(pk=book.pk)
    assert type(loaded) is Book
    loaded.slug = "p1-dune-novel"
    loaded.save()
    assert sent(engine) == [[BOOK, f"{BASE}/books/p1-dune/"]]
    engine.reset()
    Product.objects.filter(pk=book.pk).delete()
    assert sent(engine) == [[BOOK]]


def test_polymorphic_admin_delete_submits_only_the_childs_url(
    engine: Any, admin_client: Any
) -> None:
    from tests.thirdparty.models import Book, Product

    book = Book.objects.create(slug="p1-dune-novel")
    engine.reset()
    response = admin_client.post(f"/admin/thirdparty/product/{book.pk}/delete/", {"post": "yes"})
    assert response.status_code == 302, response.content.decode()[-3000:]
    assert not Product.objects.exists()
    assert sent(engine) == [[BOOK]]


def test_multi_table_child_saved_and_deleted_as_its_base_class(engine: Any) -> None:
    from tests.thirdparty.models import Book, Product

    book = Book.objects.create(slug="p1-dune")
    engine.reset()
    # Loaded as a plain Product (no polymorphic downcast): still the book's pages.
    base = Product.objects.non_polymorphic().get(pk=book.pk)
    assert type(base) is Product
    base.slug = "p1-dune-novel"
    base.save()
    assert sent(engine) == [[BOOK, f"{BASE}/books/p1-dune/"]]
    engine.reset()
    Product.objects.non_polymorphic().filter(pk=book.pk).delete()
    assert not Book.objects.exists()
    assert sent(engine) == [[BOOK]]
    engine.reset()
    Book.objects.create(slug="p2-emma").delete()
    assert sent(engine) == [[f"{BASE}/books/p2-emma/"], [f"{BASE}/books/p2-emma/"]]
    engine.reset()
    # A product that is no book is a product.
    product = Product.objects.create(slug="p3-lamp")
    product.delete()
    assert sent(engine) == [[f"{BASE}/products/p3-lamp/"], [f"{BASE}/products/p3-lamp/"]]


# A save that saves twice: the net change of the unit of work ------------------------------


@pytest.mark.parametrize("atomic_requests", [False, True], ids=["autocommit", "atomic"])
def test_an_object_saved_twice_in_a_request_submits_only_where_it_ended(
    engine: Any, client: Any, monkeypatch: pytest.MonkeyPatch, atomic_requests: bool
) -> None:
    from django.db import connection

    monkeypatch.setitem(connection.settings_dict, "ATOMIC_REQUESTS", atomic_requests)
    response = client.post("/events/new/", {"title": "Spring fair"})
    assert response.status_code == 200
    slug = response.content.decode()
    assert slug.startswith("spring-fair-")
    # Not the first save's /events// (normalised /events/), which existed for a moment.
    assert sent(engine) == [[f"{BASE}/events/{slug}/"]]


def test_a_rename_and_back_in_one_batch_never_submits_the_passing_slug(engine: Any) -> None:
    import indexnow_django
    from tests.thirdparty.models import Event

    event = Event.objects.create(title="Fair", slug="fair")
    engine.reset()
    with indexnow_django.batch():
        event.slug = "fair-renamed"
        event.save()
        event.slug = "fair"
        event.save()
    # Saved (fields = None: every save counts), where it began: /events/fair-renamed/
    # never existed for the engines.
    assert sent(engine) == [[f"{BASE}/events/fair/"]]
    engine.reset()
    with indexnow_django.batch():
        event.slug = "fair-2"
        event.save()
        event.slug = "fair-3"
        event.save()
    assert sent(engine) == [[f"{BASE}/events/fair-3/", f"{BASE}/events/fair/"]]


# The recipes of docs/third-party.md, as written there ---------------------------------------


def recipe(heading: str) -> str:
    """The first Python block of the docs/third-party.md section under ``## heading``."""
    import re
    from pathlib import Path

    page = (Path(__file__).resolve().parents[1] / "docs" / "third-party.md").read_text()
    section = page.split(f"\n## {heading}\n", 1)[1].split("\n## ", 1)[0]
    blocks = re.findall(r"^```python\n(.*?)^```", section, flags=re.M | re.S)
    assert blocks, f"no Python block under {heading!r}"
    return str(blocks[0])


def registrations_of(heading: str, **models: Any) -> list[tuple[Any, Any]]:
    """What a registration recipe registers: ``(model, options)`` for each call."""
    from indexnow_django import ModelIndexNow

    calls: list[tuple[Any, Any]] = []

    def register(model: Any, options: Any = None) -> Any:
        if options is not None:
            calls.append((model, options))
            return options

        def decorator(cls: Any) -> Any:
            calls[-1] = (model, cls)
            return cls

        calls.append((model, ModelIndexNow))
        return decorator

    exec(recipe(heading), {"register": register, "ModelIndexNow": ModelIndexNow, **models})
    return calls


def test_the_generic_relations_recipe_is_the_tested_registration() -> None:
    from indexnow_django.registration.registry import get_registration
    from tests.thirdparty.models import Article

    [(model, options)] = registrations_of("Generic relations", Article=Article)
    assert model is Article
    assert list(options.related) == ["comments"] == list(get_registration(Article).related)


def test_the_polymorphic_recipe_is_the_tested_registration() -> None:
    from indexnow_django import ModelIndexNow
    from indexnow_django.registration.registry import registry
    from tests.thirdparty.models import Book, Product

    calls = registrations_of(
        "django-polymorphic and multi-table inheritance", Product=Product, Book=Book
    )
    assert calls == [(Product, ModelIndexNow), (Book, ModelIndexNow)]
    assert type(registry[Product]) is ModelIndexNow and type(registry[Book]) is ModelIndexNow


def test_the_restore_recipe_submits_what_it_restores(engine: Any) -> None:
    from tests.thirdparty.models import Story

    data = story_saved_then_edited()
    engine.reset()
    namespace: dict[str, Any] = {}
    exec(recipe("django-reversion"), namespace)
    namespace["restore"](data)
    assert Story.objects.get().slug == "kept"
    assert sent(engine) == [[f"{STORY}/kept/", f"{STORY}/edited/"]]


def test_the_upsert_recipe_submits_old_and_new_urls(engine: Any) -> None:
    from tests.thirdparty.models import Entry

    Entry.objects.create(code="u3", slug="u3-old")
    engine.reset()
    exec(recipe("Upserts: `bulk_create(update_conflicts=True)`"), {"Entry": Entry})
    [urls] = sent(engine)
    assert sorted(urls) == [
        f"{BASE}/entries/u3-new/",
        f"{BASE}/entries/u3-old/",
        f"{BASE}/entries/u4-created/",
    ]
