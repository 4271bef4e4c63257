"""Languages: which languages a registration is worked out in. The multilingual test
site (``tests/i18n_site``: django-modeltranslation and django-parler with
``i18n_patterns``) runs in its own pytest process with its own settings
(``tests/sitesuite.py``)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


# Which languages a registration is worked out in ------------------------------------------

LANGUAGES = [("en", "English"), ("fr", "French")]


def test_the_default_follows_the_urlconf(settings) -> None:
    from indexnow_django.registration.registry import get_registration
    from tests.testapp.models import Post

    options = get_registration(Post)
    assert options is not None
    settings.LANGUAGES = LANGUAGES
    assert options.url_languages() is None  # tests.urls has no i18n_patterns
    settings.ROOT_URLCONF = "tests.urls_i18n_patterns"
    assert options.url_languages() == ("en", "fr")
    settings.USE_I18N = False
    assert options.url_languages() is None


def test_a_registration_narrows_or_keeps_the_current_language(settings) -> None:
    from indexnow_django import ModelIndexNow
    from tests.testapp.models import Post

    settings.LANGUAGES = [*LANGUAGES, ("de", "German")]
    settings.ROOT_URLCONF = "tests.urls_i18n_patterns"

    class Narrowed(ModelIndexNow):
        languages = ["fr", "de"]

    class Current(ModelIndexNow):
        languages = "current"

    class Everywhere(ModelIndexNow):
        languages = "all"

    assert Narrowed(Post).url_languages() == ("fr", "de")
    assert Current(Post).url_languages() is None
    settings.ROOT_URLCONF = "tests.urls"
    assert Everywhere(Post).url_languages() == ("en", "fr", "de")


def test_languages_not_in_settings_are_a_check_error(settings) -> None:
    from django.core import checks

    from indexnow_django import ModelIndexNow
    from indexnow_django.registration.registry import check_languages, register, unregister
    from tests.testapp.models import Untracked

    settings.LANGUAGES = LANGUAGES

    class UntrackedIndexNow(ModelIndexNow):
        languages = ["en", "es"]

    register(Untracked, UntrackedIndexNow)
    try:
        assert check_languages() == [
            checks.Error(
                "test_languages_not_in_settings_are_a_check_error.<locals>.UntrackedIndexNow "
                "for testapp.Untracked: languages names 'es', not in settings.LANGUAGES.",
                hint="Set languages to None (follow the URLconf: every language with "
                "i18n_patterns), 'all', 'current', or a list of codes of settings.LANGUAGES "
                "(en, fr).",
                obj=UntrackedIndexNow,
                id="indexnow.E030",
            )
        ]
        UntrackedIndexNow.languages = "every"
        assert [e.msg for e in check_languages()] == [
            "test_languages_not_in_settings_are_a_check_error.<locals>.UntrackedIndexNow "
            "for testapp.Untracked: languages is 'every'."
        ]
    finally:
        unregister(Untracked)
    assert check_languages() == []


def test_the_examples_of_the_multilingual_page_are_the_test_sites() -> None:
    """Each definition in a ``# blog/<module>.py`` block of docs/multilingual.md is the
    test site's own (tests/i18n_site/blog/<module>.py), which its tests run."""
    page = (ROOT / "docs" / "multilingual.md").read_text()
    blocks = re.findall(r"^```python\n# blog/(\w+\.py)\n(.*?)^```", page, flags=re.M | re.S)
    assert {name for name, _ in blocks} == {"indexnow.py", "translation.py"}
    for name, block in blocks:
        source = (ROOT / "tests" / "i18n_site" / "blog" / name).read_text()
        for part in block.strip().split("\n\n\n"):
            assert part.strip() in source, f"docs/multilingual.md, # blog/{name}:\n{part}"
