"""A site translated with django-parler, its URLs in ``i18n_patterns``: the object is
asked in each language (switched to it), whoever saves in whatever language."""

from __future__ import annotations

import io

import pytest
from django.core.management import call_command
from django.urls import reverse

from indexnow_django import batch
from indexnow_django.tracking import register, unregister
from tests.i18n_site.blog.indexnow import ArticleIndexNow
from tests.i18n_site.blog.models import Article
from tests.i18n_site.fixtures import LANGUAGES, W, article, posted, run_manage, speaking


def urls(*languages: str) -> list[str]:
    return sorted(f"{W}/{language}/article/b0-{language}/" for language in languages)


def change(obj: Article, tab: str) -> str:
    """The admin's change page of ``obj``, on the tab of the language ``tab``."""
    return reverse("admin:i18n_blog_article_change", args=[obj.pk]) + f"?language={tab}"


def form(obj: Article, tab: str, **changes: str) -> dict[str, str]:
    """The change form of ``obj``'s ``tab`` translation as the admin posts it."""
    translation = obj.get_translation(tab) if obj.has_translation(tab) else None
    data = {"status": obj.status}
    for field in ("title", "slug", "body"):
        data[field] = getattr(translation, field, "") if translation is not None else ""
    data.update(changes)
    return data


def test_saved_by_code_in_any_language(engine) -> None:
    with batch():  # the object and its translations: one unit of work
        article(languages=("de", "fr"))
    assert posted(engine) == urls("de", "fr")


@pytest.mark.parametrize("language", LANGUAGES)
def test_publishing_in_the_admin_sends_every_translated_language(admin, engine, language) -> None:
    draft = article("draft")
    assert engine.posts == []
    response = speaking(admin, language).post(
        change(draft, "fr"), form(draft, "fr", status="published")
    )
    assert response.status_code == 302, response.content[:2000]
    # German has no translation: is_published() (has_translation()) is false there.
    assert posted(engine) == urls("en", "fr")


def test_a_translation_added_in_the_admin_is_sent_with_the_others(admin, engine) -> None:
    obj = article()
    engine.reset()
    response = speaking(admin, "en").post(
        change(obj, "de"), form(obj, "de", title="b0 de", slug="b0-de")
    )
    assert response.status_code == 302, response.content[:2000]
    assert posted(engine) == urls("en", "fr", "de")


def test_unpublishing_from_a_command_sends_every_language(engine) -> None:
    obj = article(languages=LANGUAGES)
    engine.reset()
    result = run_manage(
        "shell",
        "-c",
        "from tests.i18n_site.blog.models import Article\n"
        f"a = Article.objects.get(pk={obj.pk}); a.status = 'draft'; a.save()",
    )
    assert result.returncode == 0, result.stderr
    assert posted(engine) == urls(*LANGUAGES)


def test_indexnow_submit_model_sends_every_translated_language(engine) -> None:
    article(languages=("fr", "de"))
    engine.reset()
    out = io.StringIO()
    call_command("indexnow_submit", "--model", "i18n_blog.Article", stdout=out)
    assert "2 accepted" in out.getvalue(), out.getvalue()
    assert posted(engine) == urls("fr", "de")


def test_a_slug_change_in_one_language_sends_its_old_and_new_url(admin, engine) -> None:
    obj = article()
    engine.reset()
    response = speaking(admin, "de").post(change(obj, "fr"), form(obj, "fr", slug="b0-neu"))
    assert response.status_code == 302, response.content[:2000]
    assert posted(engine) == sorted(
        [f"{W}/en/article/b0-en/", f"{W}/fr/article/b0-fr/", f"{W}/fr/article/b0-neu/"]
    )


def test_a_translation_deleted_is_sent_as_gone(admin, engine) -> None:
    obj = article(languages=LANGUAGES)
    engine.reset()
    url = reverse("admin:i18n_blog_article_delete_translation", args=[obj.pk, "fr"])
    response = speaking(admin, "en").post(url, {"post": "yes"})
    assert response.status_code == 302, response.content[:2000]
    assert not Article.objects.get(pk=obj.pk).has_translation("fr")
    assert posted(engine) == urls(*LANGUAGES)


def test_fields_cover_the_translated_fields(admin, engine) -> None:
    obj = article()
    engine.reset()
    response = speaking(admin, "fr").post(change(obj, "en"), form(obj, "en", body="new text"))
    assert response.status_code == 302, response.content[:2000]
    assert posted(engine) == urls("en", "fr")
    # A save that changes nothing that fields lists sends nothing.
    engine.reset()
    Article.objects.get(pk=obj.pk).save()
    assert engine.posts == []


def test_with_every_field_counting_a_slug_change_sends_its_old_and_new_url(admin, engine) -> None:
    # fields = None: the admin's save of the article itself (nothing of its own changed)
    # is compared with the article as stored before its translation is saved.
    class EveryField(ArticleIndexNow):
        fields = None

    unregister(Article)
    register(Article, EveryField)
    try:
        test_a_slug_change_in_one_language_sends_its_old_and_new_url(admin, engine)
    finally:
        unregister(Article)
        register(Article, ArticleIndexNow)
