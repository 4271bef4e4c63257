"""A registration as change tracking uses it: the :class:`Plan` worked out (and checked)
once per registered model by :func:`make_plan`: the fields whose change counts, the
related rows that are part of an object (:class:`Related`, generic relations'
:class:`ContentTypeOf`), whether every object is public."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from django.core.exceptions import FieldDoesNotExist
from django.db import models

from ..exceptions import RegistrationError
from .options import ModelIndexNow

__all__ = [
    "ContentTypeOf",
    "Plan",
    "Related",
    "field_of_related_rows",
    "is_many_to_many",
    "make_plan",
]


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
    #: attnames of ``url_fields`` and ``publish_at`` (``None``: any field may change the
    #: object's public state or URLs).
    url_attnames: frozenset[str] | None = None


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


def make_plan(model: type[models.Model], options: ModelIndexNow) -> Plan:
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
    url_attnames = _url_attnames(model, options, label)
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
        url_attnames=url_attnames,
    )


def _url_attnames(
    model: type[models.Model], options: ModelIndexNow, label: str
) -> frozenset[str] | None:
    """The attnames of ``url_fields`` (their translations too) and of ``publish_at``."""
    from .languages import translated_attnames

    names = options.url_fields
    if names is None:
        return None
    if isinstance(names, str) or not all(isinstance(n, str) for n in names):
        raise RegistrationError(
            f"{label}: url_fields must be a list of field names or None, not {names!r}."
        )
    found: set[str] = set()
    for name in [*names, *([options.publish_at] if options.publish_at else [])]:
        try:
            field = model._meta.get_field(name)
        except FieldDoesNotExist:
            field = None
        if is_many_to_many(model, field):
            continue  # its changes are worked out before and after, as m2m changes
        if not isinstance(field, models.Field) or not field.concrete:
            raise RegistrationError(
                f"{label}: url_fields names {name!r}, which is not a field of {model._meta.label}."
            )
        found.add(field.attname)
        found.update(translated_attnames(model, field.name))
    return frozenset(found)


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
