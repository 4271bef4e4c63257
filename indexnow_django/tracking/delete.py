"""Deletes: the URLs of a public object, worked out while its row still exists.

An object is judged as its most specific tracked class: Django deletes a multi-table
child's parent rows with it (and the child with its parent), sending a delete for
each; the parent's is left to the child's.
"""

from __future__ import annotations

from typing import Any

from django.db import models
from django.utils import timezone

from ..compat import thread_connection
from ..conf import is_enabled
from ..registration.registry import plan_for
from ..units.collector import GoneURL, hand_over
from .outcome import failed, see
from .state import child_row, children, info_of, loaded, rebuild, state, stored_values

__all__ = ["after_delete", "before_delete"]


def before_delete(
    sender: type[models.Model], instance: models.Model, using: str, **kwargs: Any
) -> None:
    """``pre_delete``: the URLs of a public object, while its row (and relations) still exist."""
    known = state(instance)
    known.deleted = ()
    plan = plan_for(sender)
    if plan is None or not is_enabled():
        return
    try:
        if (
            sender in children
            and not instance._state.adding
            and child_row(sender, instance.pk, using) is not None
        ):
            # The parent row of a child's (a multi-table or polymorphic child): deleted
            # with it, and judged as the child by the child's own delete.
            return
        stored: models.Model = instance
        if not instance._state.adding:
            values = loaded(instance)
            if values is None:
                values = stored_values(sender, instance.pk, using, info_of(sender).attnames)
            if values is not None:
                stored = rebuild(instance, values)
        known.deleted = see(plan, stored, timezone.now()).urls
    except Exception as error:
        failed(instance, "work out the URLs of a deleted object", error)


def after_delete(
    sender: type[models.Model], instance: models.Model, using: str, **kwargs: Any
) -> None:
    """``post_delete``: the row is gone; its URLs join the unit of work when the delete commits."""
    known = state(instance)
    urls, known.deleted = known.deleted, ()
    if urls:
        hand_over([GoneURL(url) for url in urls], thread_connection(using))
