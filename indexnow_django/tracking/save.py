"""Saves: what ``pre_save`` records and what ``post_save`` submits.

A save of a tracked object takes one route, through its class's ``save_base``
(:func:`saving_hook`), which calls the two steps as ``pre_save`` and ``post_save``
would, without Django's dispatch of the signals:

1. :func:`before_save` records, on the object's
   :class:`~.state.TrackedState`, the stored row that the save overwrites:
   the row the object was loaded or last saved with when it holds every
   field (nothing to do, no query); else the row as the database holds it
   (one query: an object built by hand, a field deferred); ``()`` for an
   insert.
2. :func:`after_save` keeps the values the save wrote as the
   object's row (the "before" of its next save) and hands the save to
   :func:`work_out`.
3. :func:`work_out` works the save's URLs out (:func:`urls_of_save`, from the
   row before and the values written) where that costs least and is right:
   at the end of the unit of work, with the unit's other saves, outside a
   transaction (several saves of one object are one change, from before the
   first to after the last); inside one, the state before is seen now and the
   rest at the commit (:func:`.outcome.change`); with no unit of work, at once.

A save through a base class of a tracked multi-table model (an object loaded as
the parent model) is a change of the child row it belongs to, judged as the child
(:func:`before_base_save`), whether the base class is tracked or not.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import TYPE_CHECKING, Any, NamedTuple

from django.db import models, router
from django.utils import timezone

from ..compat import STATE_ATTRIBUTE, thread_connection
from ..conf import is_enabled
from ..registration.registry import plan_for
from ..units.collector import LATER_LIMIT, current, hand_over
from .outcome import DRAFT, Seen, Unseen, change, change_in_transaction, failed, outcome, see
from .raw import counting_raw_saves, ignored
from .state import (
    LOADED,
    ModelInfo,
    Row,
    Standing,
    TrackedState,
    as_dict,
    as_written,
    changed,
    children,
    is_whole,
    known_row,
    loaded,
    model_info,
    rebuild,
    remember,
    saved_attnames,
    standing,
    state,
    stored_values,
    tracked,
)
from .watch import Watch, _watched, watched

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper

    from ..registration.registry import Plan

__all__ = [
    "after_raw_save",
    "after_save",
    "before_raw_save",
    "before_save",
    "fields_changed",
    "mark_raw",
    "outermost",
    "saving_hook",
    "urls_of_save",
    "work_out",
]


# tuple.__new__: an Unseen without the Python-level constructor (once a save).
_new_unseen = tuple.__new__


def fields_changed(plan: Plan, changes: set[str]) -> bool:
    """Whether a change of the attnames ``changes`` is one that ``fields`` lists."""
    return plan.attnames is None or not plan.attnames.isdisjoint(changes)


# 1. Before the save ---------------------------------------------------------------------


class Found:
    """What ``pre_save`` found for ``post_save`` beyond the row the save overwrites
    (seldom: most saves need nothing more)."""

    __slots__ = ("base_save", "before_seen", "deferred", "watching")

    def __init__(self) -> None:
        #: Stored values of the fields still deferred on the instance (a save does not
        #: write them).
        self.deferred: dict[str, Any] | None = None
        #: A save through a base class: the child row it changes.
        self.base_save: BaseSave | None = None
        #: An object with ``dependents()``: how it looked, and the watch of the objects
        #: whose URLs follow from it.
        self.before_seen: Seen | None = None
        self.watching: Watch | None = None


def _found(known: TrackedState) -> Found:
    found: Found | None = known.found
    if found is None:
        found = known.found = Found()
    return found


def before_save(
    sender: type[models.Model],
    instance: models.Model,
    raw: bool,
    using: str,
    update_fields: Iterable[str] | None,
    **kwargs: Any,
) -> None:
    """``pre_save``: the stored row that the save overwrites."""
    known = instance._state.__dict__.get(STATE_ATTRIBUTE)  # compat.kept_state, inlined
    if known is None or known._owner != id(instance):
        known = state(instance)
    known.before = None
    known.found = None
    if raw:
        raw = ignored(raw)
    known.raw = raw
    if raw or not is_enabled():
        return  # loaddata, a fixture: nothing (a revert is counted: see .raw)
    info = tracked.get(sender)
    if info is None or not info.plain:
        _before_other_save(known, sender, info, instance, using, update_fields)
        return
    covered = _watched.get()
    if covered and (sender, instance.pk) in covered:
        return  # a watch() block submits what its objects' saves change
    row = known.row if known.row_written is None else known_row(known)
    if (
        row is not None
        and not instance._state.adding
        and (len(row) == len(info.attnames) if type(row) is not dict else row.keys() >= info.attset)
    ):
        known.before = row  # loaded, or saved, by this process: no work before the save
    else:
        _read_before(known, info, instance, using)


def _before_other_save(
    known: TrackedState,
    sender: type[models.Model],
    info: ModelInfo | None,
    instance: models.Model,
    using: str,
    update_fields: Iterable[str] | None,
) -> None:
    """``pre_save`` of a model with tracked multi-table children or with ``dependents()``."""
    if sender in children and not (instance._state.adding and instance.pk is None):
        # An object of a base class whose row may be a tracked child's: judged as the child.
        base_save = before_base_save(instance, using, update_fields)
        if base_save is not None:
            _found(known).base_save = base_save
            return
    if info is None:
        return
    if watched(instance):
        return  # a watch() block submits what its objects' saves change
    row = known.row if known.row_written is None else known_row(known)
    if not instance._state.adding and is_whole(row, info):
        known.before = row  # loaded, or saved, by this process: no work before the save
    elif not _read_before(known, info, instance, using):
        return
    plan = info.plan
    if plan is not None and plan.has_dependents and known.before:
        _watch_dependents(known, plan, info, instance, update_fields, using)


def _read_before(known: TrackedState, info: ModelInfo, instance: models.Model, using: str) -> bool:
    """Ask the database for the row a save overwrites; ``False`` if that failed."""
    try:
        known.before, deferred = _stored_row(instance, info, using)
    except Exception as error:
        failed(instance, "work out the stored state before a save", error)
        return False
    if deferred:
        _found(known).deferred = deferred
    return True


def _watch_dependents(
    known: TrackedState,
    plan: Plan,
    info: ModelInfo,
    instance: models.Model,
    update_fields: Iterable[str] | None,
    using: str,
) -> None:
    """Before a save that changes an object with ``dependents()``: how the object and
    the objects whose URLs follow from it look now (their URLs read the stored rows)."""
    assert known.before
    values = as_dict(known.before, info)
    if not changed(values, instance.__dict__, instance, info, update_fields):
        return
    try:
        stored = rebuild(instance, values, info)
        before_seen = see(plan, stored)
        watching = Watch(plan.options.dependents(stored), using)
    except Exception as error:
        failed(instance, "work out the URLs of the objects that follow from it", error)
        return
    found = _found(known)
    found.before_seen = before_seen
    found.watching = watching


def _stored_row(
    instance: models.Model, info: ModelInfo, using: str
) -> tuple[Row, dict[str, Any] | None]:
    """The row ``instance`` overwrites, as the database holds it (``()``: none), and the
    stored values of the fields still deferred on ``instance``.
    """
    model = type(instance)
    if instance._state.adding:
        if instance.pk is None or all(
            f.has_default() or f.has_db_default() for f in instance._meta.pk_fields
        ):
            return (), None  # an insert (Django skips the UPDATE too)
        return stored_values(model, instance.pk, using, info.attnames) or (), None
    values = loaded(instance)
    if values is None:
        # Never loaded (rebuilt from a revision, say): the row is what it overwrites.
        return stored_values(model, instance.pk, using, info.attnames) or (), None
    # Deferred when the object was loaded: one query for all of them, so that
    # urls() never loads them one by one.
    missing = [a for a in info.attnames if a not in values]
    stored = stored_values(model, instance.pk, using, missing)
    if stored is None:
        return (), None
    current = instance.__dict__
    return {**values, **stored}, {a: v for a, v in stored.items() if a not in current}


# 2. After the save ----------------------------------------------------------------------


def after_save(
    sender: type[models.Model],
    instance: models.Model,
    created: bool,
    raw: bool,
    using: str,
    update_fields: Iterable[str] | None = None,
    **kwargs: Any,
) -> None:
    """``post_save``: keep the row as saved and submit what the save changed."""
    if raw and ignored(raw):
        return
    known = instance._state.__dict__.get(STATE_ATTRIBUTE)  # compat.kept_state, inlined
    if known is None or known._owner != id(instance):
        known = state(instance)
    before = known.before
    known.before = None
    found: Found | None = known.found
    if found is not None:
        known.found = None
        if found.base_save is not None:
            after_base_save(found.base_save, instance, using)
    info = tracked.get(sender)
    if info is None:
        return
    copied = update_fields is None and not info.mutable
    if copied:
        saved: dict[str, Any] = instance.__dict__.copy()
        del saved["_state"]  # no cycle: the object and its state are freed at once
        saved.pop(LOADED, None)
    elif update_fields is None:
        saved = remember(instance, info.attnames)
    else:
        saved = remember(instance, saved_attnames(instance, update_fields))
    connection = thread_connection(using)
    # What the database holds now (see keep_row).
    known.row = saved
    written = known.row_written = standing(connection) if connection.in_atomic_block else None
    if before is None:
        return
    plan = info.plan
    if plan is None:
        return
    if found is None and copied and written is not None:
        # The usual save inside a transaction: the state before is seen now (when
        # a field its URLs are read from changed), what it is at the commit then.
        try:
            compared = _compared(plan, info, before, instance, saved, None)
        except Exception as error:
            failed(instance, "work out the stored state before a save", error)
            return
        if compared is not None:
            change_in_transaction(
                plan,
                compared[0],
                instance,
                compared[1],
                using,
                written,
                saved,
                connection,
                info,
            )
        return
    # Worked out at the end of the unit of work, with its other saves and from the
    # object's state when the unit began; one whose dependents were watched, at once.
    before_seen = found.before_seen if found is not None else None
    work_out(
        plan,
        info,
        before,
        instance,
        saved,
        update_fields,
        found.deferred if found is not None else None,
        using,
        later=before_seen is None,
        standing=written,
        before_seen=before_seen,
        connection=connection,
        copied=copied,
    )
    if found is not None and found.watching is not None:
        found.watching.finish()


# 3. What it submits -----------------------------------------------------------------------


def work_out(
    plan: Plan,
    info: ModelInfo,
    before: Row,
    instance: models.Model,
    saved: dict[str, Any],
    update_fields: Iterable[str] | None,
    deferred: dict[str, Any] | None,
    using: str,
    *,
    later: bool,
    standing: Standing | None = None,
    before_seen: Seen | None = None,
    connection: BaseDatabaseWrapper | None = None,
    copied: bool = False,
) -> None:
    """Submit what a save changed, worked out when that is right and cheapest.

    ``later``: outside a transaction, in a unit of work, the URLs may be worked
    out at the end of the unit, together with its other saves (that costs less),
    and from the object's state before its first save in the unit: a URL that it
    had only between two saves (a save for a primary key, then one for a slug
    made from it) is never submitted.
    ``standing``: inside a transaction, whether the save still stands.
    ``copied``: ``saved`` is a copy of the instance's values made after the save.
    """
    if connection is None:
        connection = thread_connection(using)
    if connection.in_atomic_block:
        # The state before is seen now; what the object is at the commit, then.
        try:
            compared = _compared(plan, info, before, instance, saved, update_fields, before_seen)
        except Exception as error:
            failed(instance, "work out the stored state before a save", error)
            return
        if compared is not None:
            after = instance if copied else _as_saved(instance, saved, deferred, info)
            change(
                plan,
                compared[0],
                after,
                compared[1],
                using,
                copy_saved=after is instance,
                standing=standing,
                values=saved,
                connection=connection,
            )
        return
    args = (plan, info, before, instance, saved, update_fields, deferred, using, before_seen)
    collector = current()
    if later and collector is not None and collector.hold is None and collector.accepts():
        # At the end of the unit, with its other saves (less per save), from the state
        # before the first save of the object in the unit (its net change).
        # The object is kept alive by its entry, so its id() names it until the unit
        # works them out (which empties the index).
        waiting = collector.waiting
        by_object = collector.by_object
        key = id(instance)
        index = by_object.get(key)
        if index is not None:
            # Saved again: from the row before its first save to what this one wrote,
            # compared on every field (the saves together may have written any).
            first = waiting[index][1]
            waiting[index] = (
                urls_of_save,
                (plan, info, first[2], instance, saved, None, deferred, using, None),
            )
            return
        by_object[key] = len(waiting)
        waiting.append((urls_of_save, args))
        if len(waiting) >= LATER_LIMIT:
            collector.work_out_waiting()
        return
    urls = urls_of_save(*args)
    if urls:
        hand_over(urls, connection)


def urls_of_save(
    plan: Plan,
    info: ModelInfo,
    before: Row,
    instance: models.Model,
    saved: dict[str, Any],
    update_fields: Iterable[str] | None,
    deferred: dict[str, Any] | None,
    using: str,
    before_seen: Seen | None = None,
) -> list[str]:
    """The URLs of a save (see the change table). Never raises (a failure is logged).

    ``before``: the row the save overwrote (``()``: none); ``saved``: the values
    it wrote (the instance may have been edited since).
    """
    try:
        compared = _compared(plan, info, before, instance, saved, update_fields, before_seen)
    except Exception as error:
        failed(instance, "work out the stored state before a save", error)
        return []
    if compared is None:
        return []
    try:
        after = _as_saved(instance, saved, deferred, info)
        return outcome(plan, compared[0], after, compared[1], using)
    except Exception as error:
        failed(instance, "work out the URLs of a save", error)
        return []


def _compared(
    plan: Plan,
    info: ModelInfo,
    before: Row,
    instance: models.Model,
    saved: dict[str, Any],
    update_fields: Iterable[str] | None,
    before_seen: Seen | None = None,
) -> tuple[Seen | Unseen | None, bool] | None:
    """The object as stored before the save (``None``: the same as after it; an
    :class:`~.outcome.Unseen`: its values, seen only if the URLs may differ) and whether
    a field of ``fields`` changed; ``None`` when the save changed nothing that counts.
    Builds the stored object only when a field its URLs may be read from changed.
    """
    if not before:
        return DRAFT, True  # an insert
    # ``before`` holds every field (see before_save): a dict by attname, or a sequence
    # in the order of the model's fields.
    set_values_of = info.set_values_of
    if update_fields is None and set_values_of is not None:
        of_row = type(before) is not dict
        set_before = info.set_row_of if of_row else set_values_of
        try:
            if set_before(before) == set_values_of(saved):
                return _unchanged(plan, info, before, instance, before_seen)
            counted_of = info.counted_values_of
            counts = counted_of is None or (
                (info.counted_row_of if of_row else counted_of)(before) != counted_of(saved)
            )
            urls_of = info.url_values_of
            urls_kept = urls_of is not None and (
                (info.url_row_of if of_row else urls_of)(before) == urls_of(saved)
            )
        except KeyError:  # a field deferred on the instance: field by field
            pass
        else:
            return _judged(plan, info, before, instance, counts, urls_kept, before_seen)
    values = as_dict(before, info)
    changes = changed(values, saved, instance, info, update_fields)
    if info.auto:
        changes -= info.auto  # set by the save itself, not by the caller
    if not changes:
        return _unchanged(plan, info, values, instance, before_seen)
    urls_from = plan.url_attnames
    urls_kept = urls_from is not None and urls_from.isdisjoint(changes)
    return _judged(
        plan, info, values, instance, fields_changed(plan, changes), urls_kept, before_seen
    )


def _unchanged(
    plan: Plan,
    info: ModelInfo,
    before: Row,
    instance: models.Model,
    before_seen: Seen | None,
) -> tuple[Seen | None, bool] | None:
    """:func:`_compared` of a save that changed no field the caller sets."""
    if plan.attnames is not None:
        return None
    if plan.related:
        # Its rows (parler's translations, inline rows) may be saved next, in the
        # same transaction: what they change is compared with the object as it is now.
        return before_seen or see(plan, rebuild(instance, as_dict(before, info), info)), True
    return None, True


def _judged(
    plan: Plan,
    info: ModelInfo,
    before: Row,
    instance: models.Model,
    counts: bool,
    urls_kept: bool,
    before_seen: Seen | None,
) -> tuple[Seen | Unseen, bool] | None:
    """:func:`_compared` of a save that changed a field the caller sets: ``counts``, one
    that ``fields`` lists; ``urls_kept``, none that its URLs are read from."""
    if before_seen is not None:  # seen before the save when objects follow from it
        return before_seen, counts
    if urls_kept and not plan.related:
        # No field its public state and URLs are read from changed: they are as they
        # were, which the field values tell without building the stored object.
        return (_new_unseen(Unseen, (before, info)), True) if counts else None
    return see(plan, rebuild(instance, as_dict(before, info), info)), counts


def _as_saved(
    instance: models.Model,
    saved: dict[str, Any],
    deferred: dict[str, Any] | None,
    info: ModelInfo,
) -> models.Model:
    """The object as the save wrote it: ``instance`` itself (its cached relations and
    prefetches serve ``urls()``) unless it was edited since or fields stay deferred."""
    if deferred:
        # Fields still deferred were not saved: their stored values are current.
        return rebuild(instance, {**deferred, **saved}, info)
    return as_written(instance, saved, info)


# Saves through a base class -----------------------------------------------------------------


class BaseSave(NamedTuple):
    """A save through a base class: the child row it changes, as stored."""

    plan: Plan
    child: models.Model
    seen: Seen
    counts: bool


def before_base_save(
    instance: models.Model, using: str, update_fields: Iterable[str] | None
) -> BaseSave | None:
    """The stored child row of a tracked multi-table model that a save of ``instance``
    (an object of its base class) changes, if there is one."""
    if instance._state.adding and instance.pk is None:
        return None
    try:
        for child_model in children.get(type(instance), ()):
            child = child_model._base_manager.using(using).filter(pk=instance.pk).first()
            if child is None:
                continue
            plan = plan_for(child_model)
            if plan is None:
                return None
            values = {f.attname: getattr(child, f.attname) for f in instance._meta.concrete_fields}
            info = model_info(type(instance))
            changes = changed(values, instance.__dict__, instance, info, update_fields)
            seen = see(plan, child, timezone.now())
            return BaseSave(plan, child, seen, fields_changed(plan, changes))
    except Exception as error:
        failed(instance, "work out the stored state before a save", error)
    return None


def after_base_save(base_save: BaseSave, instance: models.Model, using: str) -> None:
    child = base_save.child
    current = instance.__dict__
    values = {
        f.attname: current[f.attname]
        for f in instance._meta.concrete_fields
        if f.attname in current
    }
    saved = rebuild(child, {**child.__dict__, **values})
    change(base_save.plan, base_save.seen, saved, base_save.counts, using, copy_saved=False)


# The route of a tracked class's saves ------------------------------------------------------

#: The hook that each tracked class's saves go through, the first in its MRO: a hook
#: acts for the classes it is the first hook of, so that a save through a class that
#: overrides ``save_base`` and calls ``super()`` is seen once.
outermost: dict[type[models.Model], Callable[..., Any]] = {}


def saving_hook(original: Callable[..., Any]) -> Callable[..., Any]:
    """``save_base`` for a tracked class whose own (or inherited) is ``original``.

    Django's ``save_base`` sends ``pre_save`` before the write and ``post_save``
    after it; the hook calls :func:`before_save` and :func:`after_save` around it
    with what those signals carry (the database alias worked out as Django does,
    so Django's own does not ask the router again). Their dispatch is what a save
    of a tracked object cost most, more than the tracking itself. A raw save
    (fixtures, reverts) takes the signals, as Django's deserializers' saves do
    (they call ``Model.save_base`` itself): see :func:`before_raw_save`.
    """

    def save_base(
        self: models.Model,
        raw: bool = False,
        force_insert: Any = False,
        force_update: bool = False,
        using: str | None = None,
        update_fields: Iterable[str] | None = None,
    ) -> Any:
        sender = self.__class__
        if raw or outermost.get(sender) is not save_base:
            if raw and not counting_raw_saves():
                mark_raw(self)
            return original(
                self,
                raw=raw,
                force_insert=force_insert,
                force_update=force_update,
                using=using,
                update_fields=update_fields,
            )
        using = using or router.db_for_write(sender, instance=self)
        before_save(sender, self, False, using, update_fields)
        created = self._state.adding
        result = original(
            self,
            raw=False,
            force_insert=force_insert,
            force_update=force_update,
            using=using,
            update_fields=update_fields,
        )
        after_save(sender, self, created, False, using, update_fields)
        return result

    save_base.indexnow_hook = True  # type: ignore[attr-defined]
    return save_base


def mark_raw(instance: models.Model) -> None:
    """A raw save of ``instance`` that is not tracked (``loaddata``): its many-to-many
    data, set right after, is ignored like the save."""
    if instance.__class__ in outermost:
        known = state(instance)
        known.before = None
        known.found = None
        known.raw = True


def before_raw_save(
    sender: type[models.Model], instance: models.Model, raw: bool, **kwargs: Any
) -> None:
    """``pre_save``, connected while :func:`~.raw.count_raw_saves` blocks are open: a
    raw save of a tracked class, counted (a revert)."""
    if raw and sender in outermost and counting_raw_saves():
        before_save(sender, instance, raw, **kwargs)


def after_raw_save(
    sender: type[models.Model], instance: models.Model, raw: bool, **kwargs: Any
) -> None:
    """``post_save`` of :func:`before_raw_save`'s saves."""
    if raw and sender in outermost and counting_raw_saves():
        after_save(sender, instance, raw=raw, **kwargs)
