"""Languages: a registration's public state and URLs in each language of the site.

On a site whose URLs carry the language (``i18n_patterns`` at the top of
``ROOT_URLCONF``, as Django's ``LocaleMiddleware`` detects it), what an object
looks like to the engines does not depend on who saved it: ``is_published()``,
``publish_time()`` and ``urls()`` are asked under ``translation.override`` for
each language of ``settings.LANGUAGES`` (django-parler objects are switched to
that language too), and the union of the public languages' URLs is what is
submitted. A registration's ``languages`` narrows the list (``["en", "fr"]``),
asks for every language on a site without ``i18n_patterns`` (``"all"``), or
keeps the active language only (``"current"``).

:func:`languages_for` says which languages a registration is worked out in
(``None``: the active one, as on a site with one language, at the cost of one
function call), and :func:`in_language` makes one of them current for an
object; the registration works an object out in each of them
(:meth:`~indexnow_django.registration.registry.ModelIndexNow.states`), which change
tracking, scheduled publications, ``indexnow_submit --model`` and the admin
all go through.

:func:`translated_attnames` finds the columns in which django-modeltranslation
keeps a field's translations (``body`` → ``body_en``, ``body_fr``), so that a
name in ``fields`` covers them.
"""

from __future__ import annotations

import contextlib
import datetime
from collections.abc import Iterator, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from django.conf import settings
from django.utils import translation

if TYPE_CHECKING:
    from django.db import models

__all__ = [
    "ALL",
    "CURRENT",
    "LanguageState",
    "clear_cache",
    "combined",
    "in_language",
    "languages_for",
    "site_languages",
    "translated_attnames",
]

#: ``languages = "all"``: every language of ``settings.LANGUAGES``, whatever the URLconf.
ALL = "all"
#: ``languages = "current"``: the active language only (URLs that hold no language).
CURRENT = "current"

_UNKNOWN: Any = object()
#: What :func:`site_languages` found (until ``setting_changed`` says otherwise).
_site: Any = _UNKNOWN


class LanguageState(NamedTuple):
    """An object as the engines see it in one language."""

    language: str
    published: bool
    when: datetime.datetime | None
    public: bool
    #: Its URLs in that language; none unless it is public in it.
    urls: tuple[str, ...]


def all_languages() -> tuple[str, ...]:
    """The codes of ``settings.LANGUAGES``, in their order."""
    return tuple(dict.fromkeys(code for code, _name in settings.LANGUAGES))


def site_languages() -> tuple[str, ...] | None:
    """Every language of ``settings.LANGUAGES`` when the URLs carry the language
    (``USE_I18N`` and ``i18n_patterns`` in ``ROOT_URLCONF``), else ``None``.

    Worked out once (it loads the URLconf) and kept until a setting it reads changes.
    """
    global _site
    found = _site
    if found is _UNKNOWN:
        found = None
        if settings.USE_I18N:
            from django.conf.urls.i18n import is_language_prefix_patterns_used

            urlconf: str = settings.ROOT_URLCONF  # type: ignore[misc]
            if is_language_prefix_patterns_used(urlconf)[0]:
                found = all_languages()
        _site = found
    return found  # type: ignore[no-any-return]


def languages_for(wanted: Sequence[str] | str | None) -> tuple[str, ...] | None:
    """The languages a registration whose ``languages`` is ``wanted`` is worked out in;
    ``None``: the active language only."""
    if wanted is None:
        found = _site
        return site_languages() if found is _UNKNOWN else found
    if wanted == CURRENT:
        return None
    if wanted == ALL:
        return all_languages()
    return tuple(wanted)


def clear_cache(**kwargs: Any) -> None:
    """Forget what :func:`site_languages` found (connected to ``setting_changed``)."""
    global _site
    if kwargs.get("setting") in (None, "ROOT_URLCONF", "LANGUAGES", "USE_I18N"):
        _site = _UNKNOWN


@contextlib.contextmanager
def in_language(obj: Any, language: str) -> Iterator[None]:
    """``language`` active, and ``obj`` switched to it when it is a django-parler object
    (whose translated fields follow the object's language, not the active one)."""
    switch = getattr(obj, "set_current_language", None)
    before = obj.get_current_language() if switch is not None else None
    with translation.override(language):
        if switch is None:
            yield
            return
        switch(language)
        try:
            yield
        finally:
            switch(before)


def combined(
    states: Sequence[LanguageState],
) -> tuple[bool, datetime.datetime | None, bool, tuple[str, ...]]:
    """What the languages make together, as tracking compares objects:

    published in some language; the earliest publication time still to come
    (else the first published language's); public when no published language
    waits for its time; the URLs of every public language.
    """
    published = [s for s in states if s.published]
    if not published:
        return False, None, False, ()
    waiting = [s.when for s in published if not s.public and s.when is not None]
    when = min(waiting) if waiting else published[0].when
    urls = tuple(dict.fromkeys(url for s in published for url in s.urls))
    return True, when, not waiting, urls


# Translated columns ----------------------------------------------------------------------


def translated_attnames(model: type[models.Model], name: str) -> list[str]:
    """The columns that hold the translations of ``model``'s field ``name``.

    django-modeltranslation's registry says, when it is installed and has
    the field; else the rule it names them by: ``<name>_<language>`` (``-``
    as ``_``) for each language of ``settings.LANGUAGES`` that is a concrete
    field of ``model``.
    """
    from django.core.exceptions import FieldDoesNotExist
    from django.db.models import Field

    found: list[str] = []
    try:
        from modeltranslation.translator import translator

        fields = translator.get_options_for_model(model).all_fields.get(name) or ()
        found = sorted(field.attname for field in fields)
    except Exception:  # not installed, or the model or the field is not translated
        found = []
    if found:
        return found
    for language in all_languages():
        try:
            field = model._meta.get_field(f"{name}_{language.replace('-', '_')}")
        except FieldDoesNotExist:
            continue
        if isinstance(field, Field) and field.concrete and not field.many_to_many:
            found.append(field.attname)
    return found
