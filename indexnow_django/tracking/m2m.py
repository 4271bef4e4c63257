"""Many-to-many changes: a changed m2m field of a registered object is a change of it.

The URLs from before the change (``pre_*`` actions) and after it (``post_*``)
are compared, so a URL that the change removed is submitted too. A change
made from the other side of the relation reaches every tracked object it
adds or removes.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any, cast

from django.db import models
from django.utils import timezone

from ..compat import thread_connection
from ..conf import is_enabled
from ..registration.registry import is_many_to_many, plan_for
from .outcome import Seen, change, failed, open_change, see
from .raw import ignored
from .state import children, loaded, rebuild, state

if TYPE_CHECKING:
    from ..registration.registry import Plan

__all__ = ["m2m_fields", "on_m2m_changed", "through_of"]


def m2m_fields(model: type[models.Model]) -> list[models.ManyToManyField[Any, Any]]:
    """The many-to-many relations of ``model`` that send ``m2m_changed`` (see
    :func:`~indexnow_django.registration.registry.is_many_to_many`: django-taggit's too)."""
    return [f for f in model._meta.many_to_many if is_many_to_many(model, f)]


def through_of(m2m: models.ManyToManyField[Any, Any]) -> type[models.Model]:
    return cast("type[models.Model]", m2m.remote_field.through)


def on_m2m_changed(
    sender: type[models.Model],
    instance: models.Model,
    action: str,
    reverse: bool,
    model: type[models.Model],
    pk_set: set[Any] | None,
    using: str,
    **kwargs: Any,
) -> None:
    """``m2m_changed``: a change of the relations of ``instance`` through ``sender``.

    ``raw`` (Django 6.1+): a fixture's m2m data, ignored like its raw save."""
    if not is_enabled() or ignored(kwargs.get("raw")):
        return
    try:
        if not reverse:
            _forward(sender, instance, action, pk_set, using)
        else:
            _reverse(sender, instance, action, model, pk_set, using)
    except Exception as error:
        failed(instance, f"work out the URLs of an m2m change ({action})", error)


def _owning_field(
    through: type[models.Model], model: type[models.Model]
) -> models.ManyToManyField[Any, Any] | None:
    for m2m in m2m_fields(model):
        if through_of(m2m) is through:
            return m2m
    return None


def _plan(through: type[models.Model], model: type[models.Model]) -> tuple[Plan, bool] | None:
    """The plan of ``model`` and whether its m2m field through ``through`` counts."""
    plan = plan_for(model)
    m2m = _owning_field(through, model)
    if plan is None or m2m is None:
        return None
    return plan, plan.m2m is None or m2m.name in plan.m2m


def _stored(instance: models.Model) -> models.Model:
    """``instance`` as its row holds it (its unsaved edits left out), when that is known."""
    values = loaded(instance)
    return rebuild(instance, values) if values is not None else instance


def _forward(
    through: type[models.Model],
    instance: models.Model,
    action: str,
    pk_set: set[Any] | None,
    using: str,
) -> None:
    found = _plan(through, type(instance))
    known = state(instance)
    if found is None or known.raw:
        return  # a fixture's m2m data, set right after its raw save: ignored like the save
    if action in ("pre_add", "pre_remove", "post_add", "post_remove") and not pk_set:
        return
    plan, counts = found
    if known.m2m_before is None:
        known.m2m_before = {}
    befores: dict[type[models.Model], Seen] = known.m2m_before
    if action.startswith("pre_"):
        if open_change(instance, thread_connection(using)) is None:
            befores[through] = see(plan, _stored(instance), timezone.now())
        return
    before = befores.pop(through, None)
    change(plan, before, _stored(instance), counts, using, copy_saved=False)


def _reverse(
    through: type[models.Model],
    instance: models.Model,
    action: str,
    model: type[models.Model],
    pk_set: set[Any] | None,
    using: str,
) -> None:
    m2m = _owning_field(through, model)
    if m2m is None:
        return
    # The tracked models whose objects the change reaches: ``model`` itself, or the
    # tracked multi-table children of an untracked ``model`` (the field is inherited).
    candidates = (model,) if plan_for(model) is not None else tuple(children.get(model, ()))
    targets: list[tuple[type[models.Model], Plan, bool]] = []
    for target in candidates:
        plan = plan_for(target)
        if plan is not None:
            targets.append((target, plan, plan.m2m is None or m2m.name in plan.m2m))
    if not targets:
        return
    known = state(instance)
    if known.m2m_reverse is None:
        known.m2m_reverse = {}
    befores: dict[type[models.Model], list[tuple[models.Model, Plan, bool, Seen]]] = (
        known.m2m_reverse
    )
    if action.startswith("pre_"):
        if action == "pre_clear":
            # The objects losing this relation are only known before the rows go.
            source = through._meta.get_field(m2m.m2m_field_name())
            pks = list(
                through._base_manager.using(using)
                .filter(**{m2m.m2m_reverse_field_name(): instance.pk})
                .values_list(cast("models.Field[Any, Any]", source).attname, flat=True)
            )
        else:
            pks = list(pk_set or ())
        now = timezone.now()
        objs = []
        seen_pks: set[Any] = set()
        for target, plan, counts in targets:
            # A child row shares its parent's primary key; the deepest child is found first.
            wanted = [pk for pk in pks if pk not in seen_pks]
            for obj in target._base_manager.using(using).filter(pk__in=wanted) if wanted else ():
                seen_pks.add(obj.pk)
                try:
                    objs.append((obj, plan, counts, see(plan, obj, now)))
                except Exception as error:
                    failed(obj, f"work out the URLs of an m2m change ({action})", error)
        befores[through] = objs
        return
    connection = thread_connection(using)
    for obj, plan, counts, seen in befores.pop(through, []):
        before = seen if open_change(obj, connection) is None else None
        change(plan, before, obj, counts, using, copy_saved=False)
