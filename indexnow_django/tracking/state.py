"""What tracking knows about one object (:class:`TrackedState`) and about its model.

The row an object was loaded or last saved with is the "before" of its next
save: :class:`TrackedState` keeps a reference to it (nothing is copied), and
what a ``pre_*`` handler learns for its ``post_*`` handler. The helpers below
read that row, ask the database for it when it is not known, and build the
object as stored from it.
"""

from __future__ import annotations

import copy
import operator
import weakref
from collections.abc import Callable, Iterable, Mapping, Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from django.db import models

from ..compat import CommitCallback, keep_state, kept_state

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper

    from ..registration.plan import Plan

__all__ = [
    "LOADED",
    "MISSING",
    "ModelInfo",
    "Row",
    "TrackedState",
    "as_written",
    "changed",
    "children",
    "info_of",
    "loaded",
    "model_info",
    "planned",
    "rebuild",
    "remember",
    "standing",
    "state",
    "stored_values",
    "tracked",
]

#: Values of a row: a sequence in the order of the model's concrete fields (as loaded),
#: or a dict by attname (fields deferred when it was loaded, or as a save wrote it).
Row = Sequence[Any] | dict[str, Any]

MISSING: Any = object()

#: The attribute in which a tracked class's ``from_db`` leaves the row it loaded the
#: object from (:mod:`.loading`), until the object's :class:`TrackedState` is made.
LOADED = "_indexnow_loaded"

_MUTABLE_TYPES = frozenset({"JSONField", "ArrayField", "HStoreField"})


class TrackedState:
    """Tracking's state for one model instance, kept with the instance (see
    :func:`indexnow_django.compat.keep_state`).

    Only :attr:`row` outlives a single save, delete or m2m change; the other
    attributes carry what a ``pre_*`` signal handler found to the ``post_*`` one.
    """

    #: The row as loaded or last saved (``None``: not known, e.g. built by hand).
    #: Read it through :func:`known_row`.
    row: Row | None = None
    #: The row was written inside a transaction: whether that write still stands.
    row_written: Standing | None = None
    #: Set before a save for after it (:mod:`.save`): the stored row the save overwrites;
    #: ``()`` for an insert; ``None`` when the save is not tracked.
    before: Row | None = None
    #: Set before a save for after it, seldom: what else it found (a
    #: :class:`~.save.Found`: fields still deferred, a save through a base class, the
    #: objects that follow from the object).
    found: Any = None
    #: Whether the last save was raw (``loaddata``): its m2m data is ignored like the save.
    raw: bool = False
    #: Set by ``pre_delete`` for ``post_delete``: the URLs of the object as stored.
    deleted: tuple[str, ...] = ()
    #: Set by the ``pre_*`` actions of an m2m change for the ``post_*`` ones, per through
    #: model: the object as stored (a change of its own field), or the objects of the
    #: other side that the change reaches (a change from the other side).
    m2m_before: dict[type[models.Model], Any] | None = None
    m2m_reverse: dict[type[models.Model], Any] | None = None
    #: Set by ``pre_save``/``pre_delete`` of a row that belongs to registered objects
    #: (:mod:`.related`): how they looked before it changed.
    owners_before: list[Any] | None = None

    def __init__(self, owner: int, row: Row | None) -> None:
        #: ``id()`` of the instance this state belongs to (a copy of it shares ``_state``).
        self._owner = owner
        self.row = row

    def __repr__(self) -> str:
        return f"<TrackedState row={'known' if self.row is not None else 'unknown'}>"


def state(instance: models.Model) -> TrackedState:
    """The :class:`TrackedState` of ``instance``, made on first use.

    A copy of an instance (``copy.copy``) shares its ``_state`` extras with the
    original: it gets a state of its own that starts from the same row.
    """
    found: TrackedState | None = kept_state(instance)
    if found is None:
        found = TrackedState(id(instance), instance.__dict__.get(LOADED))
        keep_state(instance, found)
    elif found._owner != id(instance):
        found = TrackedState(id(instance), found.row)
        keep_state(instance, found)
    return found


def loaded_row(instance: models.Model) -> Row | None:
    """The row ``instance`` was loaded or last saved with, as kept (no copy)."""
    found: TrackedState | None = kept_state(instance)
    if found is None:
        row: Row | None = instance.__dict__.get(LOADED)
        return row
    return known_row(found)


def known_row(known: TrackedState) -> Row | None:
    """:attr:`TrackedState.row`, unless the savepoint or transaction that wrote it
    rolled back: then the row is not known (the database has it)."""
    written = known.row_written
    if written is not None and not written.open():
        if not written.committed:
            known.row = None  # rolled back
        known.row_written = None
    return known.row


def keep_row(known: TrackedState, row: Row, connection: BaseDatabaseWrapper) -> Standing | None:
    """After a save on ``connection``: ``row`` is what the database holds now.

    Inside a transaction, returns what tells whether the save still stands.
    """
    known.row = row
    written = known.row_written = standing(connection) if connection.in_atomic_block else None
    return written


class Standing:
    """Something done inside a transaction on a connection (a save, an m2m change): it
    stands unless a rollback (of its savepoint, or of the transaction) drops it.

    What is done at the same depth of savepoints (the same open savepoints) stands or
    falls together: :func:`standing` gives them one.
    """

    __slots__ = ("_alive", "_mark", "committed", "savepoints")

    def __init__(self, connection: BaseDatabaseWrapper) -> None:
        #: Set when the transaction committed.
        self.committed = False
        #: The savepoints open when it was made.
        self.savepoints = list(connection.savepoint_ids)

        def indexnow_standing() -> None:
            self.committed = True

        self._mark = CommitCallback(connection, indexnow_standing)
        #: Its callback, while the connection still holds it (see CommitCallback.pending).
        self._alive = weakref.ref(indexnow_standing)

    @property
    def mark(self) -> CommitCallback:
        """Its on-commit callback."""
        return self._mark

    def stands(self) -> bool:
        """Whether it committed or may still commit (no rollback dropped it)."""
        return self.committed or self._alive() is not None

    def open(self) -> bool:
        """Whether its transaction is still to commit or roll back."""
        return not self.committed and self._alive() is not None


#: The last :class:`Standing` made on each connection (by ``id()``: it keeps its
#: connection alive), for what is done next at the same depth of savepoints.
_standing: dict[int, Standing] = {}


def standing(connection: BaseDatabaseWrapper) -> Standing:
    """What tells whether something done now inside a transaction on ``connection``
    stands: the one made for what was done before, when that shares its fate (same
    transaction, same open savepoints), else a new one."""
    found = _standing.get(id(connection))
    if (
        found is None
        or found.committed
        or found._alive() is None
        or found.savepoints != connection.savepoint_ids
    ):
        found = _standing[id(connection)] = Standing(connection)
    return found


# The model ---------------------------------------------------------------------------


def _no_values(values: Any) -> tuple[()]:
    return ()


class ModelInfo(NamedTuple):
    """What the handlers need about one tracked model class, worked out once."""

    attnames: tuple[str, ...]
    attset: frozenset[str]
    #: (name, attname) of the concrete relations, whose cached objects a copy keeps.
    relations: tuple[tuple[str, str], ...]
    #: attnames whose values can change in place (JSON...): copied deeply.
    mutable: frozenset[str]
    #: attnames whose value the save itself sets (``auto_now``): not a change of the caller's.
    auto: frozenset[str]
    #: The values of ``attnames`` in a mapping that has them all (``KeyError`` if not).
    values_of: Callable[[Mapping[str, Any]], Any]
    #: A tracked model's plan (set when the handlers are connected: :func:`planned`).
    plan: Plan | None = None
    #: A save of a tracked model's object needs nothing before it but the row it
    #: overwrites: no ``dependents()``, no tracked multi-table child judged apart.
    plain: bool = False
    #: With a plan, what tells a save's change apart without listing the fields that
    #: changed, each the values of some fields in a mapping that has them all
    #: (``KeyError`` if not): the fields a caller sets (not ``auto``; ``None``: ask
    #: :func:`changed`), those whose change counts (``None``: every field), those the
    #: object's public state and URLs are read from (``None``: any field).
    set_values_of: Callable[[Any], Any] | None = None
    counted_values_of: Callable[[Any], Any] | None = None
    url_values_of: Callable[[Any], Any] | None = None
    #: The same values in a whole row that is a sequence (in the order of ``attnames``;
    #: asked only where the getter above is not ``None``).
    set_row_of: Callable[[Any], Any] = _no_values
    counted_row_of: Callable[[Any], Any] = _no_values
    url_row_of: Callable[[Any], Any] = _no_values


def model_info(model: type[models.Model]) -> ModelInfo:
    fields = model._meta.concrete_fields
    return ModelInfo(
        tuple(f.attname for f in fields),
        frozenset(f.attname for f in fields),
        tuple((f.name, f.attname) for f in fields if f.is_relation),
        frozenset(f.attname for f in fields if f.get_internal_type() in _MUTABLE_TYPES),
        frozenset(f.attname for f in fields if getattr(f, "auto_now", False)),
        operator.itemgetter(*[f.attname for f in fields]),
    )


def planned(info: ModelInfo, plan: Plan, plain: bool) -> ModelInfo:
    """``info`` of a tracked model whose plan is ``plan`` (see :class:`ModelInfo`)."""
    attnames, auto = info.attnames, info.auto

    def values_of(names: Iterable[str], by_index: bool = False) -> Callable[[Any], Any]:
        wanted = frozenset(names)
        found: list[Any] = [a for a in attnames if a in wanted]
        if by_index:
            found = [attnames.index(a) for a in found]
        return operator.itemgetter(*found) if found else _no_values

    urls = plan.url_attnames
    counted = plan.attnames
    # When a field its URLs are read from is one the save itself sets (auto_now), a
    # save's changes are listed field by field (see .save._compared).
    whole = not (urls and urls & auto)
    return info._replace(
        plan=plan,
        plain=plain,
        set_values_of=values_of(info.attset - auto) if whole else None,
        counted_values_of=values_of(counted - auto) if counted is not None else None,
        url_values_of=values_of(urls) if urls is not None else None,
        set_row_of=values_of(info.attset - auto, True),
        counted_row_of=values_of(counted - auto, True) if counted is not None else _no_values,
        url_row_of=values_of(urls, True) if urls is not None else _no_values,
    )


#: Tracked models (registered, or subclasses of registered ones).
tracked: dict[type[models.Model], ModelInfo] = {}
#: The ``from_db`` of each tracked class without the loading hook (the class's own, or
#: Django's), as a function: objects built for comparison need no state of their own.
plain_from_db: dict[type[models.Model], Callable[..., models.Model]] = {}
#: Models (tracked or not) with tracked multi-table children, deepest children first: an
#: object of such a model whose row has a child row is judged as the child.
children: dict[type[models.Model], list[type[models.Model]]] = {}


def info_of(model: type[models.Model]) -> ModelInfo:
    info = tracked.get(model)
    return info if info is not None else model_info(model)


# The stored row -----------------------------------------------------------------------


def as_dict(row: Row, info: ModelInfo) -> dict[str, Any]:
    """``row`` by attname (a dict row keeps only the model's fields)."""
    if type(row) is dict:
        return {a: row[a] for a in info.attnames if a in row}
    return dict(zip(info.attnames, row, strict=True))


def is_whole(row: Row | None, info: ModelInfo) -> bool:
    """Whether ``row`` holds every concrete field (nothing was deferred)."""
    if row is None:
        return False
    if type(row) is dict:
        return row.keys() >= info.attset
    return len(row) == len(info.attnames)


def loaded(instance: models.Model) -> dict[str, Any] | None:
    """The values (by attname) the object was loaded or last saved with, if known."""
    row = loaded_row(instance)
    if row is None or type(row) is dict:
        return row
    return dict(zip(info_of(type(instance)).attnames, row, strict=True))


def remember(instance: models.Model, attnames: Iterable[str]) -> dict[str, Any]:
    """After a save or a refresh: the row holds ``attnames``' current values. Returns it."""
    row = dict(loaded(instance) or {})  # a new one: a save compares with the old
    current = instance.__dict__
    mutable = info_of(type(instance)).mutable
    for attname in attnames:
        if attname in current:
            value = current[attname]
            row[attname] = copy.deepcopy(value) if attname in mutable else value
    known = state(instance)
    known.row = row
    known.row_written = None
    return row


def stored_values(
    model: type[models.Model], pk: Any, using: str, attnames: Iterable[str]
) -> dict[str, Any] | None:
    """``attnames`` of the stored row (one query), or ``None`` when there is none."""
    rows = list(model._base_manager.using(using).filter(pk=pk).values(*attnames)[:1])
    return rows[0] if rows else None


def rebuild(
    instance: models.Model, values: Mapping[str, Any], info: ModelInfo | None = None
) -> models.Model:
    """A copy of ``instance`` holding ``values``: the object as it was stored.

    Built as Django builds an object from a row (the model's ``from_db()``, so
    its ``__init__`` runs and whatever it sets is there), with the related
    objects cached on ``instance`` whose key is the same.
    """
    model = type(instance)
    if info is None:
        info = info_of(model)
    attnames = info.attnames
    try:  # every field (the usual)
        names = list(attnames)
        row = info.values_of(values) if len(attnames) > 1 else [values[attnames[0]]]
    except KeyError:
        names = [a for a in attnames if a in values]
        row = [values[a] for a in names]
    plain = plain_from_db.get(model)
    old: models.Model = (
        plain(model, instance._state.db, names, row)
        if plain is not None
        else model.from_db(instance._state.db, names, row)
    )
    if info.relations:
        # Related objects cached on the instance are still right where their key did not change.
        cache = instance._state.fields_cache
        current = instance.__dict__
        old_cache = old._state.fields_cache
        for name, attname in info.relations:
            if name in cache and values.get(attname, MISSING) == current.get(attname):
                old_cache[name] = cache[name]
    return old


def as_written(
    instance: models.Model, values: Mapping[str, Any], info: ModelInfo | None = None
) -> models.Model:
    """The object as a save wrote ``values``: ``instance`` itself (its cached relations
    and prefetches serve ``urls()``) unless it was edited since, else a copy."""
    if info is None:
        info = info_of(type(instance))
    current = instance.__dict__
    try:
        if info.values_of(current) == info.values_of(values):
            return instance
    except KeyError:  # a field deferred on either
        for attname in info.attnames:
            if current.get(attname, MISSING) != values.get(attname, MISSING):
                break
        else:
            return instance
    return rebuild(instance, values, info)  # edited since


def changed(
    values: Mapping[str, Any],
    current: Mapping[str, Any],
    instance: models.Model,
    info: ModelInfo,
    update_fields: Iterable[str] | None,
) -> set[str]:
    """The attnames whose value in ``current`` (the instance's values, or a copy of
    them) differs from ``values``."""
    attnames: Iterable[str]
    if update_fields is not None:
        attnames = saved_attnames(instance, update_fields)
    else:
        attnames = info.attnames
        try:
            old, new = info.values_of(values), info.values_of(current)
        except KeyError:  # a field deferred on either
            pass
        else:
            if len(attnames) == 1:
                return set() if old == new else set(attnames)
            return {a for a, x, y in zip(attnames, old, new, strict=True) if x != y}
    get = values.get
    return {a for a in attnames if a in current and get(a, MISSING) != current[a]}


def saved_attnames(instance: models.Model, update_fields: Iterable[str]) -> list[str]:
    """The attnames that ``save(update_fields=...)`` writes."""
    names = set(update_fields)
    return [
        f.attname for f in instance._meta.concrete_fields if f.name in names or f.attname in names
    ]


def child_row(model: type[models.Model], pk: Any, using: str) -> type[models.Model] | None:
    """The most specific tracked multi-table child of ``model`` that has a row with this
    primary key (one query per child model asked), if any."""
    if pk is None:
        return None
    for child in children.get(model, ()):
        if child._base_manager.using(using).filter(pk=pk).exists():
            return child
    return None
