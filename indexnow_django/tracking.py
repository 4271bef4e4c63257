"""Change tracking: what a load, save, delete or m2m change of a registered object submits.

Which models are tracked, and how their objects map to URLs, is
:mod:`indexnow_django.registry`'s concern; this module turns their changes into
URLs (see the change table in the docs) and hands them to the current unit of
work (:mod:`indexnow_django.collector`). A published object whose
``publish_at`` is still to come is handed to :mod:`indexnow_django.scheduling`.

"Before" is the stored row, at no cost on the read path. ``Model.from_db``
(through which every object loaded by a query passes) is wrapped once: for a
tracked model it keeps, on the object's ``_state``, a reference to the values
the row was loaded with (``indexnow_row``: the row's own sequence of values in
the order of the model's concrete fields, or a dict by attname when fields
were deferred); nothing is copied. A save compares with those values
and rebuilds the stored object from them, so a tracked save of a loaded
object makes no query of its own. A query is made only when they cannot know
the row: an object that was never loaded (built from a revision or by hand
with an existing primary key) or a field deferred when it was loaded.

Handlers are connected per sender: every tracked model (registered, or a
subclass of a registered one), the parents of tracked multi-table models (a
save through the base class is worked out for the child row it belongs to),
and the ``through`` models of their m2m fields. They follow the registry:
late registrations and models created later are connected when they appear.

A save of an object whose row is known in full needs nothing before the
save: ``post_save`` compares with that row. Outside a transaction, in a
request, a job or a ``batch()``, its outcome is worked out at the end of the
unit of work with the unit's other saves
(:attr:`indexnow_django.collector.Collector.waiting`), from the values the
save wrote. Inside a transaction the outcome of a save or an m2m change is
worked out when the transaction commits, once per object, from the state
before its first change to the state at commit; so a change of a URL
together with its m2m relations (the admin saves the object, then its m2m
fields) never submits a URL that existed only halfway.
"""

from __future__ import annotations

import copy
import datetime
import logging
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple, cast

import django
from django.apps import apps
from django.db import models
from django.db.models.signals import (
    class_prepared,
    m2m_changed,
    post_delete,
    post_save,
    pre_delete,
    pre_save,
)
from django.utils import timezone
from django.utils.inspect import func_accepts_kwargs, func_supports_parameter

from .collector import LATER_LIMIT, GoneURL, collect_on_commit, current, hand_over
from .compat import thread_connection
from .conf import is_enabled
from .registry import (
    ModelIndexNow,
    Plan,
    get_registration,
    plan_for,
    register,
    registration_changed,
    registry,
    unregister,
)

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper

logger = logging.getLogger(__name__)

# The registration names stay importable from here.
__all__ = [
    "DRAFT",
    "ModelIndexNow",
    "Seen",
    "connect",
    "fields_changed",
    "get_registration",
    "rebuilt",
    "register",
    "registry",
    "state_of",
    "unregister",
    "urls_of_change",
]

_MUTABLE_TYPES = frozenset({"JSONField", "ArrayField", "HStoreField"})
_MISSING = object()


# What an object looks like to the engines --------------------------------------------


class Seen(NamedTuple):
    """One object as tracking sees it, before or after a change."""

    published: bool
    when: datetime.datetime | None
    public: bool
    urls: tuple[str, ...]


DRAFT = Seen(published=False, when=None, public=False, urls=())


def _see(plan: Plan, obj: Any, now: datetime.datetime | None = None) -> Seen:
    """Evaluate ``obj`` (URLs only when it is public: a draft's are never needed)."""
    options = plan.options
    # tuple.__new__: a Seen without the Python-level constructor (this runs twice a save).
    if plan.always_public:
        return _new_seen(Seen, (True, None, True, tuple(map(str, options.urls(obj)))))
    published = bool(options.is_published(obj))
    when = options.publish_time(obj) if published else None
    public = published and (when is None or when <= (now or timezone.now()))
    urls = tuple(map(str, options.urls(obj))) if public else ()
    return _new_seen(Seen, (published, when, public, urls))


_new_seen = tuple.__new__


def _failed(instance: models.Model, what: str, error: Exception) -> None:
    """Log what went wrong for ``instance`` (its ``urls()`` raising, say); the caller carries on."""
    logger.error(
        "IndexNow could not %s model=%s pk=%s; nothing is submitted for this object",
        what,
        instance._meta.label,
        instance.pk,
        exc_info=error,
    )


def _outcome(
    plan: Plan, before: Seen | None, saved: models.Model, counts: bool, using: str
) -> list[str]:
    """The URLs a change submits (see the change table), scheduling a future publication.

    ``before``: the object as stored before the change (``None``: the same as
    ``saved``). ``counts``: whether a field that ``fields`` lists changed (or
    ``fields`` is ``None``); a change of public state or of URLs counts anyway.
    """
    after = _see(plan, saved)
    old = after if before is None else before
    if not counts and old == after:
        return []
    urls = list(after.urls)
    if old.public and old.urls != after.urls:
        urls.extend([GoneURL(u) for u in old.urls if u not in after.urls])
    if after.published and after.when is not None and not after.public:  # still to come
        from .scheduling import schedule

        schedule(plan.options, saved, after.when, using=using)
    return urls


# One change per object and transaction ------------------------------------------------


class _Pending:
    """An object changed inside a transaction: worked out when it commits.

    Each change of the object registers its own on-commit piece; the first
    that runs works the change out (from the state before the first change
    to the state then), the others find it done. So a rolled-back savepoint
    loses only its own piece, and Django's ``captureOnCommitCallbacks``,
    which runs only the callbacks registered in its block, still sees it.
    """

    def __init__(self, plan: Plan, before: Seen | None, saved: models.Model, using: str) -> None:
        self.plan = plan
        self.before = before
        self.saved = saved
        self.counts = False
        self.using = using
        self.done = False
        self.waiting: list[Callable[[], bool]] = []

    def open(self) -> bool:
        return not self.done and any(waiting() for waiting in self.waiting)

    def resolve(self) -> list[str]:
        if self.done:
            return []
        self.done = True
        try:
            return _outcome(self.plan, self.before, self.saved, self.counts, self.using)
        except Exception as error:
            _failed(self.saved, "work out the URLs of a save", error)
            return []


_pending: weakref.WeakKeyDictionary[BaseDatabaseWrapper, dict[tuple[Any, ...], _Pending]] = (
    weakref.WeakKeyDictionary()
)


def _open_change(obj: models.Model, connection: BaseDatabaseWrapper) -> _Pending | None:
    """The change of ``obj`` still waiting for the current transaction, if any."""
    waiting = _pending.get(connection)
    if not waiting:
        return None
    pending = waiting.get((obj._meta.concrete_model, obj.pk))
    return pending if pending is not None and pending.open() else None


def _change(
    plan: Plan,
    before: Seen | None,
    saved: models.Model,
    counts: bool,
    using: str,
    *,
    copy_saved: bool = True,
) -> None:
    """Submit what a change of ``saved`` means, now or when its transaction commits."""
    connection = thread_connection(using)
    if not connection.in_atomic_block:
        try:
            urls = _outcome(plan, before, saved, counts, using)
        except Exception as error:
            _failed(saved, "work out the URLs of a save", error)
            return
        if urls:
            hand_over(urls, connection)
        return
    if copy_saved:
        # What was saved, not later unsaved edits of the instance.
        saved = _rebuild(saved, saved.__dict__)
    pending = _open_change(saved, connection)
    if pending is None:
        waiting = _pending.setdefault(connection, {})
        if len(waiting) > 1000:
            for key in [k for k, p in waiting.items() if not p.open()]:
                del waiting[key]
        pending = waiting[(saved._meta.concrete_model, saved.pk)] = _Pending(
            plan, before, saved, using
        )
    pending.saved = saved
    pending.counts = pending.counts or counts
    pending.waiting.append(collect_on_commit(pending.resolve, connection))


# The stored row -------------------------------------------------------------------------


class _Info(NamedTuple):
    """What the handlers need about one tracked model class, worked out once."""

    attnames: tuple[str, ...]
    attset: frozenset[str]
    #: (name, attname) of the concrete relations, whose cached objects a copy keeps.
    relations: tuple[tuple[str, str], ...]
    #: attnames whose values can change in place (JSON...): copied deeply.
    mutable: frozenset[str]
    #: attnames whose value the save itself sets (``auto_now``): not a change of the caller's.
    auto: frozenset[str]


def _info(model: type[models.Model]) -> _Info:
    fields = model._meta.concrete_fields
    return _Info(
        tuple(f.attname for f in fields),
        frozenset(f.attname for f in fields),
        tuple((f.name, f.attname) for f in fields if f.is_relation),
        frozenset(f.attname for f in fields if f.get_internal_type() in _MUTABLE_TYPES),
        frozenset(f.attname for f in fields if getattr(f, "auto_now", False)),
    )


#: Tracked models (registered, or subclasses of registered ones).
_tracked: dict[type[models.Model], _Info] = {}
#: Untracked models with tracked multi-table children, deepest children first.
_children: dict[type[models.Model], list[type[models.Model]]] = {}


def _info_of(model: type[models.Model]) -> _Info:
    info = _tracked.get(model)
    return info if info is not None else _info(model)


def _loaded(instance: models.Model) -> dict[str, Any] | None:
    """The values (by attname) the object was loaded or last saved with, if known."""
    row = instance._state.__dict__.get("indexnow_row")
    if row is None or type(row) is dict:
        return row
    return dict(zip(_info_of(type(instance)).attnames, row, strict=True))


def _remember(instance: models.Model, attnames: Iterable[str]) -> None:
    """After a save or a refresh: the row holds ``attnames``' current values."""
    loaded = dict(_loaded(instance) or {})  # a new one: a save compares with the old
    current = instance.__dict__
    mutable = _info_of(type(instance)).mutable
    for attname in attnames:
        if attname in current:
            value = current[attname]
            loaded[attname] = copy.deepcopy(value) if attname in mutable else value
    instance._state.indexnow_row = loaded  # type: ignore[attr-defined]


def _stored_values(
    model: type[models.Model], pk: Any, using: str, attnames: Iterable[str]
) -> dict[str, Any] | None:
    """``attnames`` of the stored row (one query), or ``None`` when there is none."""
    rows = list(model._base_manager.using(using).filter(pk=pk).values(*attnames)[:1])
    return rows[0] if rows else None


def _old_values(
    instance: models.Model, info: _Info, using: str
) -> tuple[dict[str, Any] | None, dict[str, Any]]:
    """The stored field values (by attname) of the row ``instance`` overwrites (``None``:
    there is none), and the stored values of the fields still deferred on ``instance``.
    """
    state = instance._state
    if state.adding:
        meta = instance._meta
        if instance.pk is None or all(
            f.has_default() or f.has_db_default() for f in meta.pk_fields
        ):
            return None, {}  # an insert (Django skips the UPDATE too)
        return _stored_values(type(instance), instance.pk, using, info.attnames), {}
    loaded = _loaded(instance)
    if loaded is None:
        # Never loaded (rebuilt from a revision, say): the row is what it overwrites.
        return _stored_values(type(instance), instance.pk, using, info.attnames), {}
    missing = [a for a in info.attnames if a not in loaded]
    if not missing:
        return loaded, {}
    # Deferred when the object was loaded: one query for all of them, so that
    # urls() never loads them one by one.
    stored = _stored_values(type(instance), instance.pk, using, missing)
    if stored is None:
        return None, {}
    current = instance.__dict__
    return {**loaded, **stored}, {a: v for a, v in stored.items() if a not in current}


def _rebuild(
    instance: models.Model,
    values: Mapping[str, Any],
    info: _Info | None = None,
    *,
    fresh: bool = False,
) -> models.Model:
    """A copy of ``instance`` holding ``values``: the object as it was stored.

    ``fresh``: ``values`` is a dict of attnames only that nothing else holds;
    it becomes the copy's own.
    """
    model = type(instance)
    if info is None:
        info = _info_of(model)
    old = model.__new__(model)
    if fresh:
        old.__dict__ = values  # type: ignore[assignment]
    else:
        old.__dict__.update({a: values[a] for a in info.attnames if a in values})
    state = old._state = models.base.ModelState()
    state.adding = False
    state.db = instance._state.db
    if info.relations:
        # Related objects cached on the instance are still right where their key did not change.
        cache = instance._state.fields_cache
        current = instance.__dict__
        for name, attname in info.relations:
            if name in cache and values.get(attname, _MISSING) == current.get(attname):
                state.fields_cache[name] = cache[name]
    return old


def _changed(
    values: Mapping[str, Any],
    current: Mapping[str, Any],
    instance: models.Model,
    info: _Info,
    update_fields: Iterable[str] | None,
) -> set[str]:
    """The attnames whose value in ``current`` (the instance's values, or a copy of
    them) differs from ``values``."""
    if update_fields is not None:
        saved = set(update_fields)
        attnames: Iterable[str] = [
            f.attname
            for f in instance._meta.concrete_fields
            if f.name in saved or f.attname in saved
        ]
    else:
        attnames = info.attnames
    get = values.get
    return {a for a in attnames if a in current and get(a, _MISSING) != current[a]}


def fields_changed(plan: Plan, changed: set[str]) -> bool:
    """Whether a change of the attnames ``changed`` is one that ``fields`` lists."""
    return plan.attnames is None or not plan.attnames.isdisjoint(changed)


def state_of(plan: Plan, obj: models.Model) -> Seen | None:
    """How ``obj`` looks to the engines now (``None``: its options raised, which is logged)."""
    try:
        return _see(plan, obj, timezone.now())
    except Exception as error:
        _failed(obj, "work out the stored state before a save", error)
        return None


def urls_of_change(
    plan: Plan, before: Seen | None, saved: models.Model, counts: bool, using: str
) -> list[str]:
    """The URLs that a change of ``saved`` from ``before`` submits (see the change table).

    For bulk operations, which know the stored rows and what they changed:
    ``before`` is :data:`DRAFT` for a new row; ``counts`` says whether a field
    in ``fields`` changed. Never raises (a failure is logged).
    """
    try:
        return _outcome(plan, before, saved, counts, using)
    except Exception as error:
        _failed(saved, "work out the URLs of a save", error)
        return []


def rebuilt(obj: models.Model, values: Mapping[str, Any]) -> models.Model:
    """A copy of ``obj`` holding ``values`` (by attname) where it has them."""
    return _rebuild(obj, {**obj.__dict__, **values})


# Saves ------------------------------------------------------------------------------------


class _Before(NamedTuple):
    """What ``pre_save`` learnt for ``post_save``."""

    #: The object as stored before the save (``None``: the same as after it).
    seen: Seen | None
    counts: bool
    #: Stored values of fields deferred on the instance (its unsaved, unloaded fields).
    deferred: Mapping[str, Any] | None = None
    #: A save through a base class: the stored child object it belongs to, and its plan.
    child: models.Model | None = None
    plan: Plan | None = None


def _before_save(
    sender: type[models.Model],
    instance: models.Model,
    raw: bool,
    using: str,
    update_fields: Iterable[str] | None,
    **kwargs: Any,
) -> None:
    """``pre_save``: how the object was stored (and so whether it was public) before this save.

    For an object whose row is known in full (loaded, or saved, by this
    process) there is nothing to do before the save: ``post_save`` compares
    with that row. Otherwise the stored state is worked out now, while the row
    still holds it.
    """
    state = instance._state
    known = state.__dict__
    known["indexnow_raw"] = raw
    known["indexnow_before"] = None
    if raw or not is_enabled():
        return
    if not state.adding:
        info = _tracked.get(sender)
        row = known.get("indexnow_row")
        if (
            info is not None
            and row is not None
            and (
                row.keys() >= info.attset
                if type(row) is dict
                else len(row) == len(info.attnames)  # as loaded: nothing deferred
            )
        ):
            known["indexnow_before"] = _FROM_ROW
            return
    plan = plan_for(sender)
    try:
        if plan is None:
            state.indexnow_before = _before_base_save(instance, using, update_fields)  # type: ignore[attr-defined]
            return
        info = _info_of(sender)
        values, deferred = _old_values(instance, info, using)
        if values is None:
            state.indexnow_before = _Before(DRAFT, True)  # type: ignore[attr-defined]
            return
        changed = _changed(values, instance.__dict__, instance, info, update_fields)
        if not changed:
            if plan.attnames is None:
                state.indexnow_before = _Before(None, True, deferred)  # type: ignore[attr-defined]
            return
        seen = _see(plan, _rebuild(instance, values))
        state.indexnow_before = _Before(seen, fields_changed(plan, changed), deferred)  # type: ignore[attr-defined]
    except Exception as error:
        _failed(instance, "work out the stored state before a save", error)


def _before_base_save(
    instance: models.Model, using: str, update_fields: Iterable[str] | None
) -> _Before | None:
    """A save through an untracked base class of tracked multi-table models: the child row."""
    if instance._state.adding and instance.pk is None:
        return None
    for child_model in _children.get(type(instance), ()):
        child = child_model._base_manager.using(using).filter(pk=instance.pk).first()
        if child is None:
            continue
        plan = plan_for(child_model)
        if plan is None:
            return None
        values = {f.attname: getattr(child, f.attname) for f in instance._meta.concrete_fields}
        changed = _changed(
            values, instance.__dict__, instance, _info(type(instance)), update_fields
        )
        seen = _see(plan, child, timezone.now())
        return _Before(seen, fields_changed(plan, changed), child=child, plan=plan)
    return None


def _after_save(
    sender: type[models.Model],
    instance: models.Model,
    created: bool,
    raw: bool,
    using: str,
    update_fields: Iterable[str] | None = None,
    **kwargs: Any,
) -> None:
    """``post_save``: submit what the save changed (see the change table)."""
    if raw:
        return
    state = instance._state
    known = state.__dict__
    before: _Before | object | None = known.get("indexnow_before")
    known["indexnow_before"] = None
    row = known.get("indexnow_row")  # the row before this save (replaced just below)
    info = _tracked.get(sender)
    written: dict[str, Any] | None = None
    if info is not None:
        if update_fields is None and not info.mutable:
            written = instance.__dict__.copy()
            del written["_state"]  # no cycle: the object and its state are freed at once
            state.indexnow_row = written  # type: ignore[attr-defined]
        elif update_fields is None:
            _remember(instance, info.attnames)
        else:
            names = set(update_fields)
            _remember(
                instance,
                [
                    f.attname
                    for f in instance._meta.concrete_fields
                    if f.name in names or f.attname in names
                ],
            )
    if before is None:
        return
    if before is _FROM_ROW:
        plan = plan_for(sender)
        if plan is None or info is None or row is None:
            return
        if written is not None:
            collector = current()
            if (
                collector is not None
                and collector.hold is None
                and collector.accepts()
                and not thread_connection(using).in_atomic_block
            ):
                # Worked out when the unit ends, all together (less per save).
                waiting = collector.waiting
                waiting.append((_settle_save, (plan, info, row, instance, written, using)))
                if len(waiting) >= LATER_LIMIT:
                    collector.settle()
                return
        _change_from_row(plan, info, row, instance, update_fields, using)
        return
    assert isinstance(before, _Before)
    if before.child is not None and before.plan is not None:
        child = before.child
        saved = _rebuild(
            child, {**child.__dict__, **_values_of(instance, instance._meta.concrete_fields)}
        )
        _change(before.plan, before.seen, saved, before.counts, using, copy_saved=False)
        return
    plan = plan_for(sender)
    if plan is None:
        return
    saved = instance
    if before.deferred:
        # Fields still deferred were not saved: their stored values are current.
        saved = _rebuild(instance, {**before.deferred, **instance.__dict__})
    _change(plan, before.seen, saved, before.counts, using)


#: ``pre_save`` found the whole row the object overwrites among its loaded values.
_FROM_ROW = object()


#: What ``_before_from_row`` finds when the save changed nothing that counts.
_NOTHING = object()


def _before_from_row(
    plan: Plan,
    info: _Info,
    row: Sequence[Any] | dict[str, Any],
    instance: models.Model,
    update_fields: Iterable[str] | None,
    current: dict[str, Any],
) -> tuple[Seen | None, bool] | object:
    """What ``pre_save`` would have found (the stored state, whether it counts), from
    the row the save overwrote and ``current``, the values it saved; or ``_NOTHING``.
    Builds the stored object only when a field changed.
    """
    if type(row) is dict:
        values = {a: row[a] for a in info.attnames}
    else:
        values = dict(zip(info.attnames, row, strict=True))
    changed = _changed(values, current, instance, info, update_fields)
    if info.auto:
        changed -= info.auto  # set by the save itself, after pre_save
    if not changed:
        return (None, True) if plan.attnames is None else _NOTHING
    return _see(plan, _rebuild(instance, values, info, fresh=True)), fields_changed(plan, changed)


def _change_from_row(
    plan: Plan,
    info: _Info,
    row: Sequence[Any] | dict[str, Any],
    instance: models.Model,
    update_fields: Iterable[str] | None,
    using: str,
) -> None:
    """After the save of an object whose whole row was known: submit what it changed."""
    try:
        found = _before_from_row(plan, info, row, instance, update_fields, instance.__dict__)
    except Exception as error:
        _failed(instance, "work out the stored state before a save", error)
        return
    if found is not _NOTHING:
        seen, counts = cast("tuple[Seen | None, bool]", found)
        _change(plan, seen, instance, counts, using)


def _settle_save(
    plan: Plan,
    info: _Info,
    row: Sequence[Any] | dict[str, Any],
    instance: models.Model,
    saved: dict[str, Any],
    using: str,
) -> list[str]:
    """At the end of the unit of work: the URLs of a save left for then (see ``_after_save``).

    ``saved``: the values the save wrote (the instance may have changed since).
    """
    try:
        found = _before_from_row(plan, info, row, instance, None, saved)
        if found is _NOTHING:
            return []
        seen, counts = cast("tuple[Seen | None, bool]", found)
        current = instance.__dict__
        after = instance  # as saved: its cached relations and prefetches serve urls()
        for attname in info.attnames:
            if current.get(attname, _MISSING) is not saved.get(attname, _MISSING):
                after = _rebuild(instance, saved, info)  # edited since
                break
        return _outcome(plan, seen, after, counts, using)
    except Exception as error:
        _failed(instance, "work out the URLs of a save", error)
        return []


def _values_of(obj: models.Model, fields: Iterable[models.Field[Any, Any]]) -> dict[str, Any]:
    current = obj.__dict__
    return {f.attname: current[f.attname] for f in fields if f.attname in current}


# Deletes ------------------------------------------------------------------------------------


def _before_delete(
    sender: type[models.Model], instance: models.Model, using: str, **kwargs: Any
) -> None:
    """``pre_delete``: the URLs of a public object, while its row (and relations) still exist."""
    state = instance._state
    state.indexnow_deleted = ()  # type: ignore[attr-defined]
    plan = plan_for(sender)
    if plan is None or not is_enabled():
        return
    try:
        stored: models.Model = instance
        if not state.adding:
            loaded = _loaded(instance)
            if loaded is None:
                loaded = _stored_values(sender, instance.pk, using, _info_of(sender).attnames)
            if loaded is not None:
                stored = _rebuild(instance, loaded)
        state.indexnow_deleted = _see(plan, stored, timezone.now()).urls  # type: ignore[attr-defined]
    except Exception as error:
        _failed(instance, "work out the URLs of a deleted object", error)


def _after_delete(
    sender: type[models.Model], instance: models.Model, using: str, **kwargs: Any
) -> None:
    """``post_delete``: the row is gone; its URLs join the unit of work when the delete commits."""
    urls: tuple[str, ...] = instance._state.__dict__.get("indexnow_deleted", ())
    instance._state.indexnow_deleted = ()  # type: ignore[attr-defined]
    if urls:
        hand_over([GoneURL(url) for url in urls], thread_connection(using))


# Many-to-many -------------------------------------------------------------------------------


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
    """``m2m_changed``: a changed m2m field of a registered object is a change of that object.

    The URLs from before the change (``pre_*``) and after it (``post_*``) are
    submitted, so a URL that the change removed is submitted too.
    """
    if not is_enabled():
        return
    try:
        if not reverse:
            _m2m_forward(sender, instance, action, pk_set, using)
        else:
            _m2m_reverse(sender, instance, action, model, pk_set, using)
    except Exception as error:
        _failed(instance, f"work out the URLs of an m2m change ({action})", error)


def _owning_field(
    through: type[models.Model], model: type[models.Model]
) -> models.ManyToManyField[Any, Any] | None:
    for m2m in _m2m_fields(model):
        if _through(m2m) is through:
            return m2m
    return None


def _m2m_plan(through: type[models.Model], model: type[models.Model]) -> tuple[Plan, bool] | None:
    """The plan of ``model`` and whether its m2m field through ``through`` counts."""
    plan = plan_for(model)
    m2m = _owning_field(through, model)
    if plan is None or m2m is None:
        return None
    return plan, plan.m2m is None or m2m.name in plan.m2m


def _stored(instance: models.Model) -> models.Model:
    """``instance`` as its row holds it (its unsaved edits left out), when that is known."""
    loaded = _loaded(instance)
    return _rebuild(instance, loaded) if loaded is not None else instance


def _m2m_forward(
    through: type[models.Model],
    instance: models.Model,
    action: str,
    pk_set: set[Any] | None,
    using: str,
) -> None:
    found = _m2m_plan(through, type(instance))
    state = instance._state
    if found is None or state.__dict__.get("indexnow_raw", False):
        return  # a fixture's m2m data, set right after its raw save: ignored like the save
    if action in ("pre_add", "pre_remove", "post_add", "post_remove") and not pk_set:
        return
    plan, counts = found
    befores: dict[type[models.Model], Seen] = state.__dict__.setdefault("indexnow_m2m_before", {})
    if action.startswith("pre_"):
        if _open_change(instance, thread_connection(using)) is None:
            befores[through] = _see(plan, _stored(instance), timezone.now())
        return
    before = befores.pop(through, None)
    _change(plan, before, _stored(instance), counts, using, copy_saved=False)


def _m2m_reverse(
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
    candidates = (model,) if plan_for(model) is not None else tuple(_children.get(model, ()))
    targets: list[tuple[type[models.Model], Plan, bool]] = []
    for target in candidates:
        plan = plan_for(target)
        if plan is not None:
            targets.append((target, plan, plan.m2m is None or m2m.name in plan.m2m))
    if not targets:
        return
    befores: dict[type[models.Model], list[tuple[models.Model, Plan, bool, Seen]]] = (
        instance._state.__dict__.setdefault("indexnow_m2m_reverse", {})
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
                    objs.append((obj, plan, counts, _see(plan, obj, now)))
                except Exception as error:
                    _failed(obj, f"work out the URLs of an m2m change ({action})", error)
        befores[through] = objs
        return
    connection = thread_connection(using)
    for obj, plan, counts, seen in befores.pop(through, []):
        before = seen if _open_change(obj, connection) is None else None
        _change(plan, before, obj, counts, using, copy_saved=False)


# Loading -------------------------------------------------------------------------------------

#: Classes whose ``from_db`` is hooked here, with their own ``from_db`` before (or ``None``).
_hooked: dict[type[models.Model], Any] = {}


def _hook_loading(tracked: Mapping[type[models.Model], _Info]) -> None:
    """Hook ``from_db`` of the tracked models (and only theirs), keeping the loaded values.

    A model's own ``from_db`` (a documented override) is kept and called; a
    subclass inherits its parent's hook. Untracked models are left untouched,
    so they pay nothing.
    """
    for cls, own in _hooked.items():
        if own is None:
            delattr(cls, "from_db")
        else:
            setattr(cls, "from_db", own)  # noqa: B010
    _hooked.clear()
    for cls in sorted(tracked, key=lambda c: len(c.__mro__)):
        loader = cls.from_db.__func__  # type: ignore[attr-defined]
        mutable = tracked[cls].mutable
        if getattr(loader, "indexnow_hook", False):
            if loader.indexnow_mutable == mutable:
                continue  # inherited from a hooked parent, and right for this class too
            loader = loader.indexnow_loader
        _hooked[cls] = cls.__dict__.get("from_db")
        cls.from_db = classmethod(_loading_hook(loader, mutable))  # type: ignore[method-assign,assignment]


def _loading_hook(
    loader: Callable[..., models.Model], mutable: frozenset[str]
) -> Callable[..., models.Model]:
    # Django 6.1 passes ``fetch_mode=``; a model's own older override may not take
    # it, and then it is not passed on (Django itself does the same).
    passes_options = func_supports_parameter(loader, "fetch_mode") or func_accepts_kwargs(loader)

    def from_db(
        cls: type[models.Model], db: str | None, field_names: Any, values: Any, **options: Any
    ) -> models.Model:
        obj = (
            loader(cls, db, field_names, values, **options)
            if passes_options
            else (loader(cls, db, field_names, values))
        )
        if mutable:
            # Values that can change in place (JSON): a copy, or "before" would follow them.
            values = [
                copy.deepcopy(v) if n in mutable else v
                for n, v in zip(field_names, values, strict=False)
            ]
        obj._state.indexnow_row = (  # type: ignore[attr-defined]
            values
            if len(values) == len(cls._meta.concrete_fields)
            else dict(zip(field_names, values, strict=True))
        )
        return obj

    if not (loader is _DJANGO_FROM_DB and _INLINE_FROM_DB and not mutable):
        # A model's own ``from_db``, or one with fields that can change in place.
        return _mark_hook(from_db, loader, mutable)

    # Django's own ``from_db`` (its body is the same from 5.2 to 6.1) done here rather
    # than called: a call less per object, on every page that lists tracked objects.
    # A row with deferred fields goes through the call above.
    def inline(
        cls: type[models.Model],
        db: str | None,
        field_names: Any,
        values: Any,
        *,
        fetch_mode: Any = None,
    ) -> models.Model:
        if len(values) != len(cls._meta.concrete_fields):
            if fetch_mode is None:
                return from_db(cls, db, field_names, values)
            return from_db(cls, db, field_names, values, fetch_mode=fetch_mode)
        obj = cls(*values)
        state = obj._state
        state.adding = False
        state.db = db
        if fetch_mode is not None:
            state.fetch_mode = fetch_mode
        state.indexnow_row = values  # type: ignore[attr-defined]
        return obj

    return _mark_hook(inline, loader, mutable)


#: Django's own ``Model.from_db``, as a function, and whether the hook may do its work
#: itself: on the versions whose ``from_db`` it matches (a test compares the objects).
_DJANGO_FROM_DB = models.Model.from_db.__func__  # type: ignore[attr-defined]
_INLINE_FROM_DB = django.VERSION[:2] in {(5, 2), (6, 0), (6, 1)}


def _mark_hook(
    hook: Callable[..., models.Model], loader: Callable[..., models.Model], mutable: frozenset[str]
) -> Callable[..., models.Model]:
    hook.indexnow_loader = loader  # type: ignore[attr-defined]
    hook.indexnow_mutable = mutable  # type: ignore[attr-defined]
    hook.indexnow_hook = True  # type: ignore[attr-defined]
    return hook


def _wrap_refresh() -> None:
    """Wrap ``Model.refresh_from_db`` once: a refreshed tracked object knows its row again."""
    refresh = models.Model.refresh_from_db
    if getattr(refresh, "indexnow_hook", False):
        return

    def refresh_from_db(self: models.Model, *args: Any, **kwargs: Any) -> None:
        refresh(self, *args, **kwargs)
        if type(self) in _tracked:
            names = kwargs.get("fields", args[1] if len(args) > 1 else None)
            fields: Iterable[models.Field[Any, Any]] = self._meta.concrete_fields
            if names is not None:
                names = set(names)
                fields = [f for f in fields if f.name in names or f.attname in names]
            _remember(self, [f.attname for f in fields])

    refresh_from_db.indexnow_hook = True  # type: ignore[attr-defined]
    models.Model.refresh_from_db = refresh_from_db  # type: ignore[method-assign]


# Connecting ----------------------------------------------------------------------------------

_connected: set[tuple[Any, str]] = set()


def _uid(sender: type[models.Model], name: str) -> str:
    return f"indexnow_django.tracking.{name}.{sender._meta.label_lower}"


_Handler = Callable[..., None]

_SAVE: tuple[tuple[Any, _Handler, str], ...] = (
    (pre_save, _before_save, "pre_save"),
    (post_save, _after_save, "post_save"),
)
_DELETE: tuple[tuple[Any, _Handler, str], ...] = (
    (pre_delete, _before_delete, "pre_delete"),
    (post_delete, _after_delete, "post_delete"),
)


def _m2m_fields(model: type[models.Model]) -> list[models.ManyToManyField[Any, Any]]:
    return [f for f in model._meta.many_to_many if isinstance(f, models.ManyToManyField)]


def _through(m2m: models.ManyToManyField[Any, Any]) -> type[models.Model]:
    return cast("type[models.Model]", m2m.remote_field.through)


def connect() -> None:
    """Start tracking (the app's ``ready()`` calls this); later changes are followed."""
    _wrap_refresh()
    registration_changed.connect(_sync, dispatch_uid="indexnow_django.tracking.sync")
    class_prepared.connect(_prepared, dispatch_uid="indexnow_django.tracking.class_prepared")
    _sync()


def _prepared(sender: type[models.Model], **kwargs: Any) -> None:
    """``class_prepared``: a model created after start-up (a subclass of a tracked one)."""
    if sender._meta.apps is apps and plan_for(sender) is not None:
        _sync(extra=sender)


def _sync(extra: type[models.Model] | None = None, **kwargs: Any) -> None:
    """Connect the handlers to what the registry tracks now, and only to that."""
    if not apps.models_ready:
        return
    tracked: dict[type[models.Model], _Info] = {}
    children: dict[type[models.Model], list[type[models.Model]]] = {}
    wanted: dict[tuple[Any, str], tuple[Any, _Handler]] = {}
    models_now = apps.get_models()
    if extra is not None and extra not in models_now:
        models_now.append(extra)
    for model in models_now:
        if plan_for(model) is None:
            continue
        tracked[model] = _info(model)
        for signal, handler, name in (*_SAVE, *_DELETE):
            wanted[(model, name)] = (signal, handler)
        for m2m in _m2m_fields(model):
            through = _through(m2m)
            wanted[(through, "m2m_changed")] = (m2m_changed, _m2m_changed)
        if not model._meta.proxy:
            for parent in model._meta.get_parent_list():
                if plan_for(parent) is None:
                    children.setdefault(parent, []).append(model)
    for parent, found in children.items():
        found.sort(key=lambda m: len(m._meta.get_parent_list()), reverse=True)
        for signal, handler, name in _SAVE:
            wanted[(parent, name)] = (signal, handler)
    signals = {name: signal for signal, _handler, name in (*_SAVE, *_DELETE)}
    signals["m2m_changed"] = m2m_changed
    for sender, name in _connected - set(wanted):
        signals[name].disconnect(sender=sender, dispatch_uid=_uid(sender, name))
    for (sender, name), (signal, handler) in wanted.items():
        signal.connect(handler, sender=sender, weak=False, dispatch_uid=_uid(sender, name))
    _connected.clear()
    _connected.update(wanted)
    _tracked.clear()
    _tracked.update(tracked)
    _hook_loading(tracked)
    _children.clear()
    _children.update(children)
