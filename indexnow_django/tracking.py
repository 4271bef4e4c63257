"""Which models have public pages, and the signal handlers that turn their changes into URLs.

``register(Post)`` (plainly, or as a decorator above a :class:`ModelIndexNow`
subclass) says how a model's objects map to public URLs. Installed apps'
``indexnow`` modules are imported by :func:`autodiscover`, the way the admin
imports ``admin`` modules.

The handlers are connected, per registered model, when the app is ready
(:func:`connect`); a model registered later (from another app's ``ready()``)
is connected when it is registered. They work out what a save, a delete or an
m2m change means for the object's public URLs (see the table in the docs) and
hand the URLs to the current unit of work (:mod:`indexnow_django.collector`).
A published object whose ``publish_at`` is still to come is handed to
:mod:`indexnow_django.scheduling` instead.

Old state without an extra query: when a registered object is initialised
(``post_init``), a shallow copy of its field values is kept on its
``_state``. A save compares with that copy and rebuilds the "before" object
from it, so an ordinary tracked save costs the same queries as an untracked
one. A query is made only when that copy cannot know the stored row: an object
built with an explicit primary key to overwrite a row, a field that was
deferred when the object was loaded and set since, or an object created
before its model was registered.
"""

from __future__ import annotations

import contextlib
import copy
import datetime
import logging
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, TypeVar, cast

from django.conf import settings
from django.core.exceptions import FieldDoesNotExist
from django.db import models
from django.db.models.signals import (
    m2m_changed,
    post_delete,
    post_init,
    post_save,
    pre_delete,
    pre_save,
)
from django.utils import timezone
from django.utils.module_loading import autodiscover_modules

from .collector import collect
from .conf import is_enabled
from .exceptions import RegistrationError

logger = logging.getLogger(__name__)

__all__ = [
    "ModelIndexNow",
    "autodiscover",
    "connect",
    "get_registration",
    "register",
    "registry",
    "unregister",
]


class ModelIndexNow:
    """How one model's objects map to public URLs. Subclass and ``register`` it.

    An object is *public* when :meth:`is_published` is true and the value of
    its :attr:`publish_at` field (if any, and if not ``None``) is not in the future.
    """

    #: Fields whose change makes a save worth submitting (m2m fields included).
    #: ``None``: every save counts.
    fields: Sequence[str] | None = None
    #: Name of a ``DateTimeField`` (or ``DateField``) holding the publication time.
    #: ``None``: no publication time.
    publish_at: str | None = None

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


def as_datetime(value: datetime.date | datetime.datetime) -> datetime.datetime:
    """``value`` as a datetime comparable with ``timezone.now()`` (a date is its midnight)."""
    if not isinstance(value, datetime.datetime):
        value = datetime.datetime.combine(value, datetime.time.min)
    if settings.USE_TZ and timezone.is_naive(value):
        value = timezone.make_aware(value)
    elif not settings.USE_TZ and timezone.is_aware(value):
        value = timezone.make_naive(value)
    return value


# Registration ----------------------------------------------------------------


@dataclass(frozen=True)
class _Plan:
    """What the handlers need to know about one registered model, worked out once."""

    options: ModelIndexNow
    #: attnames of the concrete fields in ``fields`` (``None``: every save counts).
    attnames: frozenset[str] | None
    #: names of the m2m fields in ``fields`` (``None``: every m2m field counts).
    m2m: frozenset[str] | None
    #: attnames whose values can be changed in place (JSON...): copied deeply.
    mutable: tuple[str, ...] = field(default=())


registry: dict[type[models.Model], ModelIndexNow] = {}
_plans: dict[type[models.Model], _Plan] = {}
# Set by connect() (the app's ready()); later registrations connect at once.
_connected = False

_T = TypeVar("_T", bound=type[ModelIndexNow])

_MUTABLE_TYPES = frozenset({"JSONField", "ArrayField", "HStoreField"})


def register(model: type[models.Model], options: type[ModelIndexNow] | None = None) -> Any:
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
    if _connected:
        _connect(model)


def _plan(model: type[models.Model], options: ModelIndexNow) -> _Plan:
    label = f"{type(options).__qualname__} for {model._meta.label}"
    names = options.fields
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
                raise RegistrationError(
                    f"{label}: fields names {name!r}, which is not a field of {model._meta.label}."
                ) from None
            if isinstance(found, models.ManyToManyField):
                m2m.add(found.name)
            elif isinstance(found, models.Field) and found.concrete:
                attnames.add(found.attname)
            else:
                raise RegistrationError(
                    f"{label}: fields names {name!r}, which is not a field stored with "
                    f"{model._meta.label} (a reverse or generic relation)."
                )
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
    mutable = tuple(
        f.attname for f in model._meta.concrete_fields if f.get_internal_type() in _MUTABLE_TYPES
    )
    return _Plan(
        options,
        frozenset(attnames) if attnames is not None else None,
        frozenset(m2m) if m2m is not None else None,
        mutable,
    )


def unregister(model: type[models.Model]) -> None:
    """Stop tracking ``model`` (mainly for tests)."""
    if model not in registry:
        raise RegistrationError(f"{model._meta.label} is not registered with IndexNow.")
    _disconnect(model)
    del registry[model]
    del _plans[model]


def get_registration(model: type[models.Model]) -> ModelIndexNow | None:
    """The options ``model`` is registered with, or ``None``."""
    return registry.get(model)


def autodiscover() -> None:
    """Import every installed app's ``indexnow`` module, as the admin does with ``admin``."""
    autodiscover_modules("indexnow")


def connect() -> None:
    """Connect the handlers of every registered model (the app's ``ready()`` calls this).

    Models registered after this call are connected when they are registered.
    """
    global _connected
    _connected = True
    for model in list(registry):
        _connect(model)


def _uid(model: type[models.Model], name: str) -> str:
    return f"indexnow_django.tracking.{name}.{model._meta.label_lower}"


_Handler = Callable[..., None]


def _receivers() -> tuple[tuple[Any, _Handler, str], ...]:
    return (
        (post_init, _remember_loaded, "post_init"),
        (pre_save, _before_save, "pre_save"),
        (post_save, _after_save, "post_save"),
        (pre_delete, _before_delete, "pre_delete"),
        (post_delete, _after_delete, "post_delete"),
    )


def _m2m_fields(model: type[models.Model]) -> list[models.ManyToManyField[Any, Any]]:
    return [f for f in model._meta.many_to_many if isinstance(f, models.ManyToManyField)]


def _through(m2m: models.ManyToManyField[Any, Any]) -> type[models.Model]:
    return cast("type[models.Model]", m2m.remote_field.through)


def _connect(model: type[models.Model]) -> None:
    for signal, handler, name in _receivers():
        signal.connect(handler, sender=model, dispatch_uid=_uid(model, name))
    for m2m in _m2m_fields(model):
        m2m_changed.connect(
            _m2m_changed, sender=_through(m2m), dispatch_uid=_uid(model, f"m2m.{m2m.name}")
        )


def _disconnect(model: type[models.Model]) -> None:
    for signal, _handler, name in _receivers():
        signal.disconnect(sender=model, dispatch_uid=_uid(model, name))
    for m2m in _m2m_fields(model):
        m2m_changed.disconnect(sender=_through(m2m), dispatch_uid=_uid(model, f"m2m.{m2m.name}"))


# What a change means ---------------------------------------------------------


@dataclass(frozen=True)
class _Seen:
    """One object as the handlers see it, before or after a change."""

    published: bool
    when: datetime.datetime | None
    public: bool
    urls: tuple[str, ...]


_DRAFT = _Seen(published=False, when=None, public=False, urls=())


def _see(options: ModelIndexNow, obj: Any, now: datetime.datetime) -> _Seen:
    """Evaluate ``obj`` (URLs only when it is public: a draft's are never needed)."""
    published = bool(options.is_published(obj))
    when = options.publish_time(obj) if published else None
    public = published and (when is None or when <= now)
    urls = tuple(str(u) for u in options.urls(obj)) if public else ()
    return _Seen(published, when, public, urls)


@dataclass(frozen=True)
class _Before:
    """What ``pre_save`` learnt for ``post_save``."""

    #: The object as stored before the save (``None``: the same as after it).
    seen: _Seen | None
    skip: bool = False
    #: Stored values of fields deferred on the instance (its unsaved, unloaded fields).
    deferred: Mapping[str, Any] = field(default_factory=dict)


_SKIP = _Before(seen=None, skip=True)


@contextlib.contextmanager
def _guard(instance: models.Model, what: str) -> Iterator[None]:
    """Log, never raise, what goes wrong for ``instance`` (its ``urls()`` raising, say)."""
    try:
        yield
    except Exception:
        logger.exception(
            "IndexNow could not %s model=%s pk=%s; nothing is submitted for this object",
            what,
            instance._meta.label,
            instance.pk,
        )


def _remember_loaded(sender: type[models.Model], instance: models.Model, **kwargs: Any) -> None:
    """``post_init``: keep the values the object starts with, to compare a later save with."""
    loaded = instance.__dict__.copy()
    del loaded["_state"]
    plan = _plans.get(sender)
    if plan is not None and plan.mutable:
        for attname in plan.mutable:
            if attname in loaded:
                loaded[attname] = copy.deepcopy(loaded[attname])
    instance._state.indexnow_loaded = loaded  # type: ignore[attr-defined]


_MISSING = object()


def _stored_values(
    instance: models.Model, using: str, attnames: Iterable[str]
) -> dict[str, Any] | None:
    """``attnames`` of ``instance``'s stored row (one query), or ``None`` when it has none."""
    rows = list(
        type(instance)._base_manager.using(using).filter(pk=instance.pk).values(*attnames)[:1]
    )
    return rows[0] if rows else None


def _old_values(instance: models.Model, using: str) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The stored field values (by attname) of the row ``instance`` overwrites (``None``:
    there is none), and the stored values of the fields still deferred on ``instance``.
    """
    meta = instance._meta
    state = instance._state
    attnames = [f.attname for f in meta.concrete_fields]
    if state.adding:
        if instance.pk is None or all(
            f.has_default() or f.has_db_default() for f in meta.pk_fields
        ):
            return None, {}  # an insert (Django skips the UPDATE too)
        return _stored_values(instance, using, attnames), {}
    loaded: dict[str, Any] | None = getattr(state, "indexnow_loaded", None)
    if loaded is None:
        loaded = {}
    missing = [a for a in attnames if a not in loaded]
    if not missing:
        return loaded, {}
    # Deferred when the object was loaded (or loaded before its model was registered):
    # one query for all of them, so that urls() never loads them one by one.
    stored = _stored_values(instance, using, missing)
    if stored is None:
        return None, {}
    current = instance.__dict__
    return {**loaded, **stored}, {a: v for a, v in stored.items() if a not in current}


def _rebuild(instance: models.Model, values: Mapping[str, Any]) -> models.Model:
    """A copy of ``instance`` holding ``values``: the object as it was stored."""
    model = type(instance)
    old = model.__new__(model)
    current = instance.__dict__
    old.__dict__.update(
        {
            f.attname: values[f.attname]
            for f in instance._meta.concrete_fields
            if f.attname in values
        }
    )
    old._state = models.base.ModelState()
    old._state.adding = False
    old._state.db = instance._state.db
    # Related objects cached on the instance are still right where their key did not change.
    cache = instance._state.fields_cache
    for f in instance._meta.concrete_fields:
        if (
            f.is_relation
            and f.name in cache
            and values.get(f.attname, _MISSING) == current.get(f.attname)
        ):
            old._state.fields_cache[f.name] = cache[f.name]
    return old


def _changed(
    values: Mapping[str, Any], instance: models.Model, update_fields: Iterable[str] | None
) -> set[str]:
    current = instance.__dict__
    attnames = [f.attname for f in instance._meta.concrete_fields if f.attname in current]
    if update_fields is not None:
        saved = set(update_fields)
        attnames = [
            f.attname
            for f in instance._meta.concrete_fields
            if f.name in saved or f.attname in saved
        ]
    return {a for a in attnames if values.get(a, _MISSING) != current.get(a, _MISSING)}


def _before_save(
    sender: type[models.Model],
    instance: models.Model,
    raw: bool,
    using: str,
    update_fields: Iterable[str] | None,
    **kwargs: Any,
) -> None:
    """``pre_save``: how the object was stored (and so whether it was public) before this save."""
    state = instance._state
    state.indexnow_raw = raw  # type: ignore[attr-defined]
    state.indexnow_before = None  # type: ignore[attr-defined]
    plan = _plans.get(sender)
    if raw or plan is None or not is_enabled():
        return
    state.indexnow_before = _SKIP  # type: ignore[attr-defined]  # unless all goes well
    with _guard(instance, "work out the stored state before a save"):
        values, deferred = _old_values(instance, using)
        if values is None:
            state.indexnow_before = _Before(_DRAFT)  # type: ignore[attr-defined]
            return
        changed = _changed(values, instance, update_fields)
        if plan.attnames is not None and not (changed & plan.attnames):
            return
        if not changed:
            state.indexnow_before = _Before(None, deferred=deferred)  # type: ignore[attr-defined]
            return
        old = _rebuild(instance, values)
        seen = _see(plan.options, old, timezone.now())
        state.indexnow_before = _Before(seen, deferred=deferred)  # type: ignore[attr-defined]


def _after_save(
    sender: type[models.Model],
    instance: models.Model,
    created: bool,
    raw: bool,
    using: str,
    **kwargs: Any,
) -> None:
    """``post_save``: submit what the save changed (see the table in the docs)."""
    state = instance._state
    before: _Before | None = getattr(state, "indexnow_before", None)
    state.indexnow_before = None  # type: ignore[attr-defined]
    plan = _plans.get(sender)
    if raw or plan is None:
        return
    try:
        if before is None or before.skip or not is_enabled():
            return
        with _guard(instance, "work out the URLs of a save"):
            _submit_save(plan, instance, before, using)
    finally:
        _remember_loaded(sender, instance)


def _submit_save(plan: _Plan, instance: models.Model, before: _Before, using: str) -> None:
    """Hand the URLs that this save changed to the unit of work."""
    now = timezone.now()
    saved = instance
    if before.deferred:
        # Fields still deferred were not saved: their stored values are current.
        saved = _rebuild(instance, {**before.deferred, **instance.__dict__})
    after = _see(plan.options, saved, now)
    old = before.seen if before.seen is not None else after
    urls: list[str] = list(after.urls)
    if old.public:
        urls.extend(u for u in old.urls if u not in after.urls)
    if urls:
        collect(urls, using)
    if after.published and after.when is not None and after.when > now:
        from .scheduling import schedule

        schedule(plan.options, instance, after.when, using=using)


def _before_delete(sender: type[models.Model], instance: models.Model, **kwargs: Any) -> None:
    """``pre_delete``: the URLs of a public object, while its row (and relations) still exist."""
    state = instance._state
    state.indexnow_deleted = ()  # type: ignore[attr-defined]
    plan = _plans.get(sender)
    if plan is None or not is_enabled():
        return
    with _guard(instance, "work out the URLs of a deleted object"):
        loaded: dict[str, Any] | None = getattr(state, "indexnow_loaded", None)
        stored = _rebuild(instance, loaded) if loaded is not None and not state.adding else instance
        state.indexnow_deleted = _see(plan.options, stored, timezone.now()).urls  # type: ignore[attr-defined]


def _after_delete(
    sender: type[models.Model], instance: models.Model, using: str, **kwargs: Any
) -> None:
    """``post_delete``: the row is gone; its URLs join the unit of work when the delete commits."""
    urls: tuple[str, ...] = getattr(instance._state, "indexnow_deleted", ())
    instance._state.indexnow_deleted = ()  # type: ignore[attr-defined]
    if urls:
        collect(urls, using)


def _m2m_changed(
    sender: type[models.Model],
    instance: models.Model,
    action: str,
    reverse: bool,
    model: type[models.Model],
    pk_set: set[Any] | None,
    using: str,
    **kwargs: Any,
) -> None:
    """``m2m_changed``: a changed m2m field of a registered object is a change of that object."""
    if action not in ("post_add", "post_remove", "post_clear", "pre_clear") or not is_enabled():
        return
    with _guard(instance, f"work out the URLs of an m2m change ({action})"):
        if not reverse:
            _m2m_forward(sender, instance, action, pk_set, using)
        else:
            _m2m_reverse(sender, instance, action, model, pk_set, using)


def _owning_field(
    through: type[models.Model], model: type[models.Model]
) -> models.ManyToManyField[Any, Any] | None:
    for m2m in _m2m_fields(model):
        if _through(m2m) is through:
            return m2m
    return None


def _m2m_forward(
    through: type[models.Model],
    instance: models.Model,
    action: str,
    pk_set: set[Any] | None,
    using: str,
) -> None:
    plan = _plans.get(type(instance))
    if plan is None or action == "pre_clear" or getattr(instance._state, "indexnow_raw", False):
        return  # a fixture's m2m data, set right after its raw save: ignored like the save
    if action != "post_clear" and not pk_set:
        return
    m2m = _owning_field(through, type(instance))
    if m2m is None or (plan.m2m is not None and m2m.name not in plan.m2m):
        return
    seen = _see(plan.options, instance, timezone.now())
    if seen.urls:
        collect(seen.urls, using)


def _m2m_reverse(
    through: type[models.Model],
    instance: models.Model,
    action: str,
    model: type[models.Model],
    pk_set: set[Any] | None,
    using: str,
) -> None:
    plan = _plans.get(model)
    m2m = _owning_field(through, model)
    if plan is None or m2m is None or (plan.m2m is not None and m2m.name not in plan.m2m):
        return
    state = instance._state
    if action == "pre_clear":
        # The objects losing this relation are only known before the rows go.
        source = through._meta.get_field(m2m.m2m_field_name())
        target = m2m.m2m_reverse_field_name()
        pks = list(
            through._base_manager.using(using)
            .filter(**{target: instance.pk})
            .values_list(cast("models.Field[Any, Any]", source).attname, flat=True)
        )
        clearing: dict[type[models.Model], list[Any]] = getattr(state, "indexnow_clearing", {})
        clearing[through] = pks
        state.indexnow_clearing = clearing  # type: ignore[attr-defined]
        return
    if action == "post_clear":
        pks = getattr(state, "indexnow_clearing", {}).pop(through, [])
    else:
        pks = list(pk_set or ())
    if not pks:
        return
    now = timezone.now()
    urls: list[str] = []
    for obj in model._base_manager.using(using).filter(pk__in=pks):
        with _guard(obj, f"work out the URLs of an m2m change ({action})"):
            urls.extend(_see(plan.options, obj, now).urls)
    if urls:
        collect(urls, using)
