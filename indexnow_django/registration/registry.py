"""Which models have public pages: ``ModelIndexNow``, ``register()`` and their lookup.

``register(Post)`` (plainly, or as a decorator above a :class:`ModelIndexNow`
subclass) says how a model's objects map to public URLs. Installed apps'
``indexnow`` modules are imported by :func:`autodiscover`, the way the admin
imports ``admin`` modules, so any app may register any model (a contrib or
third-party one too).

A registration covers the model's subclasses, multi-table and proxy, unless a
subclass has a registration of its own: :func:`plan_for` finds the nearest
registered class in a model's ancestry. What happens when a registered object
is loaded, saved or deleted is :mod:`indexnow_django.tracking`'s concern; it
listens to :data:`registration_changed` to follow registrations made late.
"""

from __future__ import annotations

import datetime
from collections.abc import Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar, overload

from django.conf import settings
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.dispatch import Signal
from django.utils import timezone
from django.utils.module_loading import autodiscover_modules

from ..exceptions import RegistrationError

if TYPE_CHECKING:
    from .languages import LanguageState

__all__ = [
    "ModelIndexNow",
    "Plan",
    "as_datetime",
    "autodiscover",
    "get_registration",
    "plan_for",
    "register",
    "registration_changed",
    "registry",
    "unregister",
]


class ModelIndexNow:
    """How one model's objects map to public URLs. Subclass and ``register`` it.

    An object is *public* when :meth:`is_published` is true and the value of
    its :attr:`publish_at` field (if any, and if not ``None``) is not in the future.
    """

    #: Fields whose change makes a save worth submitting (m2m fields included).
    #: ``None``: every save counts. A change of the object's public state or of
    #: its URLs counts whatever this lists.
    fields: Sequence[str] | None = None
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


@dataclass(frozen=True)
class Plan:
    """A registration as change tracking uses it, worked out (and checked) once."""

    options: ModelIndexNow
    #: attnames of the concrete fields in ``fields`` (``None``: every save counts).
    attnames: frozenset[str] | None
    #: names of the m2m fields in ``fields`` (``None``: every m2m field counts).
    m2m: frozenset[str] | None
    #: Every object is public (``is_published``, ``publish_time`` and ``publish_at``
    #: left as they are): tracking then only asks for ``urls()``.
    always_public: bool = False
    #: Names in ``fields`` that are no field tracking follows (a system check error).
    unknown_fields: tuple[str, ...] = ()
    #: The relations whose rows are part of the object (``related``, and parler's
    #: translations), with the attnames of their fields that ``fields`` lists.
    related: tuple[Related, ...] = ()
    #: Names in ``related`` that tracking cannot follow (a system check warning).
    unknown_related: tuple[str, ...] = ()
    #: The registration says which objects' URLs follow from an object's (``dependents``).
    has_dependents: bool = False


@dataclass(frozen=True)
class Related:
    """Rows of another model that are part of a registered object (see ``related``)."""

    #: The reverse relation's name on the registered model (``translations``).
    name: str
    #: The model of the rows, and the attname of its key to the registered object.
    model: type[models.Model]
    owner_attname: str
    #: attnames of the rows' fields that ``fields`` lists (``None``: ``fields`` is ``None``).
    attnames: frozenset[str] | None
    #: A generic relation: the rows whose content type names the registered model.
    content_type: ContentTypeOf | None = None

    def belongs(self, row: models.Model) -> bool:
        """Whether ``row`` (of :attr:`model`) is one of the registered model's rows."""
        content_type = self.content_type
        if content_type is None:
            return True
        return bool(row.__dict__.get(content_type.attname) == content_type.id())


@dataclass(frozen=True)
class ContentTypeOf:
    """The content type column of a generic relation's rows, and the model it names."""

    attname: str
    model: type[models.Model]
    for_concrete_model: bool

    def id(self) -> Any:
        """The id of the owner model's content type (cached by ``ContentType``'s manager)."""
        from django.contrib.contenttypes.models import ContentType

        return ContentType.objects.get_for_model(
            self.model, for_concrete_model=self.for_concrete_model
        ).pk


#: The registered models and their options (exact registrations, no subclasses).
registry: dict[type[models.Model], ModelIndexNow] = {}
_plans: dict[type[models.Model], Plan] = {}
#: ``plan_for`` answers, subclasses included; emptied by every (un)registration.
_resolved: dict[type[Any], Plan | None] = {}

#: Sent with ``model`` after a model is registered or unregistered.
registration_changed = Signal()

_T = TypeVar("_T", bound=type[ModelIndexNow])


@overload
def register(model: type[models.Model], options: _T) -> _T: ...


@overload
def register(model: type[models.Model], options: None = None) -> Callable[[_T], _T]: ...


def register(
    model: type[models.Model], options: type[ModelIndexNow] | None = None
) -> type[ModelIndexNow] | Callable[[_T], _T]:
    """Register ``model``; usable plainly or as a class decorator.

    ``register(Post)`` uses every default; ``register(Post, PostIndexNow)`` or
    ``@register(Post)`` above a ``ModelIndexNow`` subclass sets the options.
    Registering a model twice raises :class:`~indexnow_django.exceptions.RegistrationError`.
    """
    if options is not None:
        _register(model, options)
        return options
    _register(model, ModelIndexNow)

    def decorator(cls: _T) -> _T:
        _register(model, cls, replace=True)
        return cls

    return decorator


def _register(
    model: type[models.Model], options: type[ModelIndexNow], *, replace: bool = False
) -> None:
    if not (isinstance(model, type) and issubclass(model, models.Model)):
        raise RegistrationError(f"register() takes a model class, not {model!r}.")
    if model._meta.abstract:
        raise RegistrationError(
            f"{model.__name__} is abstract and cannot be registered with IndexNow."
        )
    if not (isinstance(options, type) and issubclass(options, ModelIndexNow)):
        raise RegistrationError(f"{options!r} is not a ModelIndexNow subclass.")
    if model in registry and not replace:
        raise RegistrationError(
            f"{model._meta.label} is already registered with IndexNow "
            f"(by {type(registry[model]).__module__}.{type(registry[model]).__qualname__})."
        )
    plan = _plan(model, options(model))
    registry[model] = plan.options
    _plans[model] = plan
    _resolved.clear()
    registration_changed.send(sender=register, model=model)


def _plan(model: type[models.Model], options: ModelIndexNow) -> Plan:
    from .languages import translated_attnames

    label = f"{type(options).__qualname__} for {model._meta.label}"
    names = options.fields
    unknown: list[str] = []
    #: attnames of related rows' fields that ``fields`` lists, by relation name.
    related_attnames: dict[str, set[str]] = {}
    unknown_related: list[str] = []
    attnames: set[str] | None = None
    m2m: set[str] | None = None
    if names is not None:
        if isinstance(names, str) or not all(isinstance(n, str) for n in names):
            raise RegistrationError(
                f"{label}: fields must be a list of field names or None, not {names!r}."
            )
        attnames, m2m = set(), set()
        for name in names:
            try:
                found = model._meta.get_field(name)
            except FieldDoesNotExist:
                of_rows = field_of_related_rows(model, name)
                if of_rows is None:
                    unknown.append(name)
                else:
                    related_attnames.setdefault(of_rows[0], set()).add(of_rows[1])
                continue
            if is_many_to_many(model, found):
                m2m.add(found.name)
            elif isinstance(found, models.Field) and found.concrete:
                attnames.add(found.attname)
                # Its translations (django-modeltranslation's body_en, body_fr...).
                attnames.update(translated_attnames(model, found.name))
            else:
                unknown.append(name)
    if options.publish_at is not None:
        try:
            when = model._meta.get_field(options.publish_at)
        except FieldDoesNotExist:
            when = None
        if not isinstance(when, models.DateField):  # DateTimeField subclasses DateField
            raise RegistrationError(
                f"{label}: publish_at must name a DateTimeField or DateField of "
                f"{model._meta.label}, not {options.publish_at!r}."
            )
    kind = type(options)
    return Plan(
        options,
        frozenset(attnames) if attnames is not None else None,
        frozenset(m2m) if m2m is not None else None,
        always_public=(
            options.publish_at is None
            and kind.is_published is ModelIndexNow.is_published
            and kind.publish_time is ModelIndexNow.publish_time
        ),
        unknown_fields=tuple(unknown),
        related=_related(model, options, names is None, related_attnames, unknown_related),
        unknown_related=tuple(unknown_related),
        has_dependents=kind.dependents is not ModelIndexNow.dependents,
    )


def field_of_related_rows(model: type[models.Model], name: str) -> tuple[str, str] | None:
    """``(relation, attname)`` when ``name``, not a field of ``model``, is a field of the
    rows of one of its relations that belong to it: django-parler's translated fields
    (``"slug"`` of ``translations``). ``None`` otherwise."""
    from ..compat import parler_translations

    for relation, translated in parler_translations(model):
        if name in translated:
            rows = model._meta.get_field(relation).related_model
            return relation, rows._meta.get_field(name).attname  # type: ignore[union-attr]
    return None


def _related(
    model: type[models.Model],
    options: ModelIndexNow,
    every_field: bool,
    listed: dict[str, set[str]],
    unknown: list[str],
) -> tuple[Related, ...]:
    from ..compat import parler_translations

    names = list(dict.fromkeys([*(r for r, _f in parler_translations(model)), *options.related]))
    found: list[Related] = []
    for name in names:
        try:
            relation = model._meta.get_field(name)
        except FieldDoesNotExist:
            relation = None
        attnames = None if every_field else frozenset(listed.get(name, ()))
        generic = _generic_relation(relation)
        if generic is not None:
            rows, object_id, content_type = generic
            found.append(Related(name, rows, object_id, attnames, content_type))
            continue
        remote = getattr(relation, "field", None)
        if (
            relation is None
            or not relation.auto_created
            or not (relation.one_to_many or relation.one_to_one)
            or remote is None
        ):
            unknown.append(name)  # a system check warning
            continue
        found.append(
            Related(
                name,
                relation.related_model,  # type: ignore[arg-type]
                remote.attname,
                attnames,
            )
        )
    return tuple(found)


def _generic_relation(relation: Any) -> tuple[type[models.Model], str, ContentTypeOf] | None:
    """The rows' model, their object id's attname and the content type they name, when
    ``relation`` is a ``GenericRelation`` (django.contrib.contenttypes)."""
    from django.apps import apps

    if relation is None or not apps.is_installed("django.contrib.contenttypes"):
        return None
    from django.contrib.contenttypes.fields import GenericRelation

    if not isinstance(relation, GenericRelation):
        return None
    rows = relation.related_model
    object_id = rows._meta.get_field(relation.object_id_field_name)
    content_type = rows._meta.get_field(relation.content_type_field_name)
    return (
        rows,
        object_id.attname,  # type: ignore[union-attr]
        ContentTypeOf(
            content_type.attname,  # type: ignore[union-attr]
            relation.model,
            relation.for_concrete_model,
        ),
    )


def is_many_to_many(model: type[models.Model], field: Any) -> bool:
    """Whether ``field`` is a many-to-many relation of ``model`` that tracking follows:
    an entry of ``_meta.many_to_many`` whose changes go through a ``through`` model,
    which sends ``m2m_changed`` (a ``ManyToManyField``, django-taggit's
    ``TaggableManager``, ...)."""
    through = getattr(getattr(field, "remote_field", None), "through", None)
    return (
        field in model._meta.many_to_many
        and isinstance(through, type)
        and issubclass(through, models.Model)
    )


def check_registrations(**kwargs: Any) -> list[Any]:
    """``indexnow.E031``: a name in a registration's ``fields`` is no field of its model
    that tracking follows (misspelt, or a reverse or generic relation); ``indexnow.W031``:
    a name in its ``related`` is no relation that tracking can follow (a warning: the
    site runs, and those rows' changes submit nothing)."""
    from django.core import checks

    errors: list[Any] = []
    for model, plan in _plans.items():
        for name in plan.unknown_fields:
            options = plan.options
            errors.append(
                checks.Error(
                    f"{type(options).__name__} for {model._meta.label}: fields names "
                    f"{name!r}, which is not a field of {model._meta.label} that IndexNow "
                    "tracks.",
                    hint=(
                        "fields lists the model's own fields and many-to-many relations; for "
                        "rows of another model that belong to the object (a reverse relation, "
                        "translations, inline rows) use related = [...]."
                    ),
                    obj=type(options),
                    id="indexnow.E031",
                )
            )
        for name in plan.unknown_related:
            errors.append(
                checks.Warning(
                    f"{type(plan.options).__name__} for {model._meta.label}: related names "
                    f"{name!r}, which IndexNow cannot follow: it is not a reverse relation "
                    f"or a generic relation of {model._meta.label}. Saving or deleting its "
                    "rows submits nothing.",
                    hint=(
                        "related lists the names by which the model reaches the rows of "
                        "another model that point to it: a foreign key's related_name, or a "
                        "GenericRelation. For rows reached in another way, submit the "
                        "object from your own code (indexnow_django.submit_objects)."
                    ),
                    obj=type(plan.options),
                    id="indexnow.W031",
                )
            )
    return errors


def unregister(model: type[models.Model]) -> None:
    """Stop tracking ``model`` (mainly for tests)."""
    if model not in registry:
        raise RegistrationError(f"{model._meta.label} is not registered with IndexNow.")
    del registry[model]
    del _plans[model]
    _resolved.clear()
    registration_changed.send(sender=unregister, model=model)


def plan_for(model: type[Any]) -> Plan | None:
    """The plan that applies to ``model``: its own registration, else its nearest
    registered ancestor's (multi-table or proxy), else ``None``.
    """
    try:
        return _resolved[model]
    except KeyError:
        pass
    found = None
    for cls in model.__mro__:
        found = _plans.get(cls)
        if found is not None:
            break
    _resolved[model] = found
    return found


def get_registration(model: type[models.Model]) -> ModelIndexNow | None:
    """The options that apply to ``model`` (its own, or an ancestor's), or ``None``."""
    plan = plan_for(model)
    return plan.options if plan is not None else None


def autodiscover() -> None:
    """Import every installed app's ``indexnow`` module, as the admin does with ``admin``."""
    autodiscover_modules("indexnow")


def check_languages(**kwargs: Any) -> list[Any]:
    """``indexnow.E030``: a registration's ``languages`` is not ``None``, ``"all"``,
    ``"current"`` or a list of codes of ``settings.LANGUAGES``."""
    from django.core import checks

    from .languages import ALL, CURRENT, all_languages

    known = set(all_languages())
    errors: list[Any] = []
    for model, options in sorted(registry.items(), key=lambda item: item[0]._meta.label):
        wanted = options.languages
        if wanted is None or wanted in (ALL, CURRENT):
            continue
        label = f"{type(options).__qualname__} for {model._meta.label}"
        if isinstance(wanted, str) or not all(isinstance(code, str) for code in wanted):
            problem = f"languages is {wanted!r}"
        else:
            unknown = [code for code in wanted if code not in known]
            if not unknown and wanted:
                continue
            problem = (
                f"languages names {', '.join(map(repr, unknown))}, not in settings.LANGUAGES"
                if unknown
                else "languages is an empty list"
            )
        errors.append(
            checks.Error(
                f"{label}: {problem}.",
                hint="Set languages to None (follow the URLconf: every language with "
                "i18n_patterns), 'all', 'current', or a list of codes of settings.LANGUAGES "
                f"({', '.join(sorted(known))}).",
                obj=type(options),
                id="indexnow.E030",
            )
        )
    return errors
