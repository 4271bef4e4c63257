"""What a registration says: :class:`ModelIndexNow`, the options of one model (which
objects are public, from when, at which URLs, in which languages, which changes count),
and :func:`as_datetime`, how a publication time is compared with now."""

from __future__ import annotations

import datetime
from collections.abc import Iterable, Sequence
from typing import TYPE_CHECKING, Any

from django.conf import settings
from django.db import models
from django.utils import timezone

if TYPE_CHECKING:
    from .languages import LanguageState

__all__ = ["ModelIndexNow", "as_datetime"]


class ModelIndexNow:
    """How one model's objects map to public URLs. Subclass and ``register`` it.

    An object is *public* when :meth:`is_published` is true and the value of
    its :attr:`publish_at` field (if any, and if not ``None``) is not in the future.
    """

    #: Fields whose change makes a save worth submitting (m2m fields included).
    #: ``None``: every save counts. A change of the object's public state or of
    #: its URLs counts whatever this lists.
    fields: Sequence[str] | None = None
    #: The fields of the model that :meth:`is_published`, :meth:`publish_time` and
    #: :meth:`urls` read (a foreign key covers the related object read through it),
    #: when the registration can tell. A save that changes none of them leaves the
    #: object's public state and URLs as they were, which is then known without
    #: asking them about the stored row. ``None``: it cannot tell, any field may.
    url_fields: Sequence[str] | None = None
    #: Name of a ``DateTimeField`` (or ``DateField``) holding the publication time.
    #: ``None``: no publication time.
    publish_at: str | None = None
    #: The languages whose URLs are submitted (:mod:`indexnow_django.registration.languages`):
    #: ``None`` follows the URLconf (every language of ``settings.LANGUAGES`` when
    #: ``ROOT_URLCONF`` uses ``i18n_patterns``, else the active one); a list of
    #: language codes narrows that; ``"all"``: every language whatever the URLconf;
    #: ``"current"``: the active language only.
    languages: Sequence[str] | str | None = None
    #: Reverse relations whose rows are part of the object (inline child rows, the
    #: comments shown on its page): saving or deleting one submits the object's
    #: URLs, old and new. django-parler's translations need not be listed.
    related: Sequence[str] = ()

    def __init__(self, model: type[models.Model]) -> None:
        self.model = model

    def __repr__(self) -> str:
        return f"<{type(self).__qualname__} for {self.model._meta.label}>"

    def is_published(self, obj: Any) -> bool:
        """Whether ``obj`` is meant to be public (its ``publish_at`` aside)."""
        return True

    def urls(self, obj: Any) -> Sequence[str]:
        """The URLs (absolute, or paths joined to ``BASE_URL``) of ``obj``'s pages."""
        return [obj.get_absolute_url()]

    def dependents(self, obj: Any) -> Iterable[Any]:
        """The objects whose URLs follow from ``obj``'s (a tree's descendants): when a
        save changes ``obj``, their old and new URLs are submitted too. Default: none."""
        return ()

    def publish_time(self, obj: Any) -> datetime.datetime | None:
        """The value of the :attr:`publish_at` field as a datetime (aware under ``USE_TZ``)."""
        if self.publish_at is None:
            return None
        value = getattr(obj, self.publish_at)
        return as_datetime(value) if value is not None else None

    def is_public(self, obj: Any, now: datetime.datetime | None = None) -> bool:
        """Whether ``obj`` is published and its publication time (if any) has come."""
        if not self.is_published(obj):
            return False
        when = self.publish_time(obj)
        return when is None or when <= (now or timezone.now())

    def url_languages(self) -> tuple[str, ...] | None:
        """The language codes :meth:`urls` and :meth:`is_published` are asked in
        (see :attr:`languages`); ``None``: the active language only."""
        from .languages import languages_for

        return languages_for(self.languages)

    def urls_per_language(
        self, obj: Any, now: datetime.datetime | None = None
    ) -> dict[str, LanguageState]:
        """``obj`` in each language of :meth:`url_languages`, by language code: whether
        it is published and public there, and its URLs there (none unless public).

        With the active language only, that language (``settings.LANGUAGE_CODE``
        when translation is deactivated) is the one key.
        """
        from django.utils import translation

        languages = self.url_languages()
        if languages is None:
            languages = (translation.get_language() or settings.LANGUAGE_CODE,)
        return {state.language: state for state in self.states(obj, languages, now)}

    def states(
        self, obj: Any, languages: Sequence[str], now: datetime.datetime | None = None
    ) -> list[LanguageState]:
        """``obj`` in each of ``languages``: published, its publication time, public, its
        URLs (see :mod:`indexnow_django.registration.languages`)."""
        from .languages import LanguageState, in_language

        if now is None:
            now = timezone.now()
        states = []
        for language in languages:
            with in_language(obj, language):
                published = bool(self.is_published(obj))
                when = self.publish_time(obj) if published else None
                public = published and (when is None or when <= now)
                urls = tuple(dict.fromkeys(map(str, self.urls(obj)))) if public else ()
            states.append(LanguageState(language, published, when, public, urls))
        return states

    def public_urls(self, obj: Any, now: datetime.datetime | None = None) -> list[str]:
        """What is submitted for ``obj`` now: the URLs of every language it is public in."""
        languages = self.url_languages()
        if languages is None:
            if not self.is_public(obj, now):
                return []
            return list(dict.fromkeys(map(str, self.urls(obj))))
        states = self.states(obj, languages, now)
        return list(dict.fromkeys(url for state in states for url in state.urls))


def as_datetime(value: datetime.date | datetime.datetime) -> datetime.datetime:
    """``value`` as a datetime comparable with ``timezone.now()`` (a date is its midnight)."""
    if not isinstance(value, datetime.datetime):
        value = datetime.datetime.combine(value, datetime.time.min)
    if settings.USE_TZ and timezone.is_naive(value):
        value = timezone.make_aware(value)
    elif not settings.USE_TZ and timezone.is_aware(value):
        value = timezone.make_naive(value)
    return value
