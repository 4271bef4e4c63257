"""Rows that belong to a registered object (``related``, django-parler's translations).

A row belongs through a foreign key to the object (a reverse relation) or through a
``GenericRelation`` (a generic foreign key whose content type names the object's model).

Saving or deleting such a row is a change of its owner: the owner's state is
seen before the row changes (``pre_save``, ``pre_delete``) and after
(``post_save``, ``post_delete``), and the URLs that differ join the unit of
work, inside a transaction when it commits. An owner already changed in the
same transaction (the admin saves the object, then its inline rows) is worked
out at the commit from the database as committed, which covers its rows.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django.db import models
from django.utils import timezone

from ..compat import thread_connection
from ..conf import is_enabled
from ..registration.registry import Related, plan_for
from ..units.collector import GoneURL, hand_over
from .outcome import Seen, failed, open_change, see
from .raw import ignored
from .state import state

if TYPE_CHECKING:
    from ..registration.registry import Plan

__all__ = ["after_row_change", "before_row_change", "owners"]

#: For each model whose rows belong to registered objects: (owner model, relation).
owners: dict[type[models.Model], list[tuple[type[models.Model], Related]]] = {}


def before_row_change(
    sender: type[models.Model], instance: models.Model, using: str, **kwargs: Any
) -> None:
    """``pre_save``, ``pre_delete``: how the owners of ``instance`` look before it changes."""
    known = state(instance)
    known.owners_before = None
    if ignored(kwargs.get("raw")) or not is_enabled():
        return
    found: list[tuple[Plan, Related, Any, Seen, dict[str, Any] | None]] = []
    connection = thread_connection(using)
    for owner_model, related in owners.get(sender, ()):
        plan = plan_for(owner_model)
        owner_pk = instance.__dict__.get(related.owner_attname)
        if plan is None or owner_pk is None or not related.belongs(instance):
            continue  # no owner, or (a generic relation) one of another model
        try:
            owner = _owner(owner_model, plan, owner_pk, using)
            if owner is None or open_change(owner, connection) is not None:
                continue  # gone, or worked out at the commit anyway
            stored = None
            if related.attnames and not instance._state.adding and instance.pk is not None:
                stored = (
                    sender._base_manager.using(using)
                    .filter(pk=instance.pk)
                    .values(*related.attnames)
                    .first()
                )
            found.append((plan, related, owner_pk, see(plan, owner, timezone.now()), stored))
        except Exception as error:
            failed(instance, "work out the stored state of the object it belongs to", error)
    known.owners_before = found


def after_row_change(
    sender: type[models.Model], instance: models.Model, using: str, **kwargs: Any
) -> None:
    """``post_save``, ``post_delete``: submit what the change of the row changed of its owners."""
    known = state(instance)
    found, known.owners_before = known.owners_before, None
    if not found:
        return
    connection = thread_connection(using)
    deleted = "created" not in kwargs
    for plan, related, owner_pk, before, stored in found:
        owner_model = plan.options.model
        try:
            owner = _owner(owner_model, plan, owner_pk, using)
            if owner is None:
                continue  # deleted with its rows: its own delete submits it
            after = see(plan, owner, timezone.now())
            urls = _differences(before, after, _counts(related, instance, stored, deleted))
        except Exception as error:
            failed(instance, "work out the URLs of the object it belongs to", error)
            continue
        if urls:
            hand_over(urls, connection)


def _owner(model: type[models.Model], plan: Plan, pk: Any, using: str) -> models.Model | None:
    """The owner as stored, its related rows read with it: what ``urls()`` reads of them
    is the database's, not a cache that the app updates after the signal (parler's)."""
    names = [related.name for related in plan.related]
    owner: models.Model | None = (
        model._base_manager.using(using).filter(pk=pk).prefetch_related(*names).first()
    )
    return owner


def _counts(
    related: Related, row: models.Model, stored: dict[str, Any] | None, deleted: bool
) -> bool:
    """Whether the change of ``row`` changed a field that ``fields`` lists."""
    if related.attnames is None:
        return True
    if not related.attnames:
        return False
    if stored is None or deleted:
        return True  # a new row, or one gone
    current = row.__dict__
    return any(a in current and current[a] != stored.get(a) for a in related.attnames)


def _differences(before: Seen, after: Seen, counts: bool) -> list[str]:
    """The URLs the owner's change from ``before`` to ``after`` submits (the change table)."""
    if not counts and before == after:
        return []
    urls = list(after.urls)
    if before.urls != after.urls:  # URLs are only ever seen for an object public somewhere
        urls.extend([GoneURL(u) for u in before.urls if u not in after.urls])
    return urls
