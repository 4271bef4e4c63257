"""Which models have public pages: ``register()``, ``unregister()`` and their lookup
(:func:`get_registration`, :func:`plan_for`), the registrations' system checks and
:func:`autodiscover`. The options themselves are :mod:`.options`' (:class:`ModelIndexNow`,
re-exported here), what tracking works out of them :mod:`.plan`'s.

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

from collections.abc import Callable
from typing import Any, TypeVar, overload

from django.db import models
from django.dispatch import Signal
from django.utils.module_loading import autodiscover_modules

from ..exceptions import RegistrationError
from .options import ModelIndexNow, as_datetime
from .plan import Plan, Related, is_many_to_many, make_plan

__all__ = [
    "ModelIndexNow",
    "Plan",
    "Related",
    "as_datetime",
    "autodiscover",
    "get_registration",
    "is_many_to_many",
    "plan_for",
    "register",
    "registration_changed",
    "registry",
    "unregister",
]


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
    plan = make_plan(model, options(model))
    registry[model] = plan.options
    _plans[model] = plan
    _resolved.clear()
    registration_changed.send(sender=register, model=model)


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
