"""A site translated with django-modeltranslation, its URLs in ``i18n_patterns``: every
language's URL is submitted, whoever saves in whatever language, wherever."""

from __future__ import annotations

import datetime
import io
import json

import django_rq
import pytest
from django.core.management import call_command
from django.urls import reverse
from django.utils import timezone

from indexnow_django.registration.registry import get_registration
from tests.i18n_site.blog.models import Story
from tests.i18n_site.fixtures import (
    LANGUAGES,
    W,
    article,
    posted,
    run_manage,
    speaking,
    story,
    story_form,
    story_urls,
)


def change_url(obj: Story) -> str:
    return reverse("admin:i18n_blog_story_change", args=[obj.pk])


@pytest.mark.parametrize("language", LANGUAGES)
def test_publishing_in_the_admin_sends_every_language(admin, engine, language) -> None:
    draft = story("draft")
    assert engine.posts == []
    response = speaking(admin, language).post(
        change_url(draft), story_form(draft, status="published")
    )
    assert response.status_code == 302, response.content[:2000]
    assert posted(engine) == story_urls("a0")


def test_publishing_from_a_command_sends_every_language(engine) -> None:
    draft = story("draft")
    result = run_manage("publish_story", str(draft.pk))
    assert result.returncode == 0, result.stderr
    assert posted(engine) == story_urls("a0")


def test_unpublishing_sends_every_language(admin, engine) -> None:
    published = story()
    engine.reset()
    response = speaking(admin, "fr").post(
        change_url(published), story_form(published, status="draft")
    )
    assert response.status_code == 302
    assert posted(engine) == story_urls("a0")


def test_a_slug_change_in_one_language_sends_its_old_and_new_url(admin, engine) -> None:
    published = story()
    engine.reset()
    response = speaking(admin, "en").post(
        change_url(published), story_form(published, slug_fr="a0-neu")
    )
    assert response.status_code == 302
    old_and_new = [f"{W}/fr/story/a0-fr/", f"{W}/fr/story/a0-neu/"]
    assert posted(engine) == sorted([f"{W}/en/story/a0-en/", f"{W}/de/story/a0-de/", *old_and_new])


def test_fields_cover_the_translated_columns(admin, engine) -> None:
    # fields = ["title", "slug", "body", ...]: an edit of body_fr is an edit of body.
    published = story()
    engine.reset()
    response = speaking(admin, "de").post(
        change_url(published), story_form(published, body_fr="nouveau texte")
    )
    assert response.status_code == 302
    assert posted(engine) == story_urls("a0")
    # A save that changes no field of fields still sends nothing.
    engine.reset()
    Story.objects.get(pk=published.pk).save()
    assert engine.posts == []


def test_a_language_is_public_on_its_own(admin, engine) -> None:
    # Written in English only: only the English page is public.
    obj = story(languages=("en",))
    assert posted(engine) == [f"{W}/en/story/a0-en/"]

    # The French translation is written: now French too.
    engine.reset()
    response = speaking(admin, "en").post(
        change_url(obj), story_form(obj, title_fr="a0 fr", slug_fr="a0-fr")
    )
    assert response.status_code == 302
    assert posted(engine) == [f"{W}/en/story/a0-en/", f"{W}/fr/story/a0-fr/"]

    # Its title removed, the French page is no longer public: sent so that engines drop it.
    engine.reset()
    obj.refresh_from_db()
    response = speaking(admin, "fr").post(change_url(obj), story_form(obj, title_fr=""))
    assert response.status_code == 302
    assert posted(engine) == [f"{W}/en/story/a0-en/", f"{W}/fr/story/a0-fr/"]
    obj.refresh_from_db()
    options = get_registration(Story)
    assert options is not None
    assert {code: state.public for code, state in options.urls_per_language(obj).items()} == {
        "en": True,
        "fr": False,
        "de": False,
    }


def test_deleting_sends_every_public_language(engine) -> None:
    obj = story(languages=("en", "de"))
    engine.reset()
    obj.delete()
    assert posted(engine) == story_urls("a0", ("en", "de"))


def test_indexnow_submit_model_sends_every_language(engine) -> None:
    story(name="a1")
    story(name="a2", languages=("fr",))
    story("draft", name="a3")
    engine.reset()
    out = io.StringIO()
    call_command("indexnow_submit", "--model", "i18n_blog.Story", stdout=out)
    assert "4 accepted" in out.getvalue(), out.getvalue()
    assert posted(engine) == sorted([*story_urls("a1"), f"{W}/fr/story/a2-fr/"])

    # An object public in no language, by --pk: said so.
    draft = Story.objects.get(slug_en="a3-en")
    result = run_manage("indexnow_submit", "--model", "i18n_blog.Story", "--pk", str(draft.pk))
    assert "not public in any language: is_published() is false" in result.stdout + result.stderr


def test_the_admin_panel_and_submit_now_cover_every_language(admin, engine, history_on) -> None:
    # Written (and accepted) in French only, looked at by an editor with English active.
    obj = story(languages=("fr",))
    assert posted(engine) == [f"{W}/fr/story/a0-fr/"]
    engine.reset()
    english = speaking(admin, "en")
    text = english.get(change_url(obj)).content.decode()
    assert 'id="indexnow-status"' in text
    assert "its URLs are not submitted" not in text
    assert "last accepted" in text

    submit = reverse("admin:i18n_blog_story_indexnow_submit", args=[obj.pk])
    assert english.post(submit).status_code == 302
    assert posted(engine) == [f"{W}/fr/story/a0-fr/"]


@pytest.mark.worker
def test_a_worker_sends_every_language_and_a_scheduled_publication_too(
    engine, start_worker, indexnow_settings
) -> None:
    overrides = {"DISPATCH": "queue"}
    indexnow_settings(**overrides)
    first = story("draft", name="w1")
    later = story(
        name="w2", published_at=timezone.now() + datetime.timedelta(seconds=3)
    )  # scheduled when this save commits: its job waits in rq's scheduled registry
    assert engine.posts == []
    start_worker(overrides, extra_env={"DJANGO_SETTINGS_MODULE": "tests.i18n_site.settings"})

    django_rq.get_queue("default").enqueue("tests.i18n_site.blog.jobs.publish_stories", [first.pk])
    engine.wait_for_posts(1, timeout=60)
    assert posted(engine) == story_urls("w1")

    # When its time comes, the scheduled story is sent in every language.
    engine.reset()
    engine.wait_for_posts(1, timeout=60)
    assert posted(engine) == story_urls("w2")
    assert Story.objects.get(pk=later.pk).status == "published"

    # A django-parler article published by a job: every language it is translated into.
    engine.reset()
    draft = article("draft", languages=("en", "de"))
    django_rq.get_queue("default").enqueue("tests.i18n_site.blog.jobs.publish_articles", [draft.pk])
    engine.wait_for_posts(1, timeout=60)
    assert posted(engine) == [f"{W}/de/article/b0-de/", f"{W}/en/article/b0-en/"]


def test_indexnow_explain_shows_the_urls_of_every_language(engine) -> None:
    # Written in French and German; the command runs with English active.
    obj = story(languages=("fr", "de"))
    result = run_manage("indexnow_explain", "i18n_blog.Story", str(obj.pk), "--json")
    assert result.returncode == 0, result.stdout + result.stderr
    report = json.loads(result.stdout)
    assert report["public"] is True
    assert [(u["language"], u["url"]) for u in report["urls"]] == [
        ("fr", f"{W}/fr/story/a0-fr/"),
        ("de", f"{W}/de/story/a0-de/"),
    ]
