"""A site with two locales: each translation of a page is a page of its own, with its
URL under its locale's prefix (/fr/), submitted when it is published or unpublished."""

from __future__ import annotations

from typing import Any

from django.urls import reverse
from wagtail.models import Locale, Page

from tests.wagtail_site.fixtures import Tree, edit_url, posted, publish_data

W = "https://www.example.com"


def translate(page: Page, locale: Locale, slug: str) -> Any:
    """``page`` translated into ``locale`` by code, published with ``slug``."""
    translation = page.copy_for_translation(locale)
    translation.slug = slug
    translation.save_revision().publish()
    return type(page).objects.get(pk=translation.pk)


def test_each_locale_has_its_own_urls(tree: Tree, admin, engine) -> None:
    french = Locale.objects.create(language_code="fr")
    translate(tree.home, french, "accueil")
    news = translate(tree.news, french, "actualites")
    assert set(posted(engine)) == {f"{W}/fr/", f"{W}/fr/actualites/"}

    # The French article, translated as a draft, then published in the admin.
    engine.reset()
    first = tree.first.copy_for_translation(french)
    assert engine.posts == []
    response = admin.post(edit_url(first), publish_data(first, slug="premier"))
    assert response.status_code == 302, response.content[:500]
    assert posted(engine) == [f"{W}/fr/actualites/premier/"]

    # The English page is a page of its own.
    engine.reset()
    response = admin.post(edit_url(tree.first), publish_data(tree.first, body="new"))
    assert response.status_code == 302
    assert posted(engine) == [f"{W}/news/first/"]

    # A slug change of the French section: its old and new URLs, and its article's.
    engine.reset()
    news = type(news).objects.get(pk=news.pk)
    response = admin.post(edit_url(news), publish_data(news, slug="nouvelles"))
    assert response.status_code == 302
    assert posted(engine) == [
        f"{W}/fr/actualites/",
        f"{W}/fr/actualites/premier/",
        f"{W}/fr/nouvelles/",
        f"{W}/fr/nouvelles/premier/",
    ]

    # Unpublishing the French article sends its URL only.
    engine.reset()
    response = admin.post(reverse("wagtailadmin_pages:unpublish", args=[first.pk]), {})
    assert response.status_code == 302
    assert posted(engine) == [f"{W}/fr/nouvelles/premier/"]
