"""What a change submits (the change table), now or when its transaction commits.

:func:`see` evaluates an object (is it public, what are its URLs),
:func:`outcome` compares the object before and after a change, and
:func:`change` hands the result over: at once outside a transaction, at the
commit inside one (once per object and transaction, from the state before its
first change to the state at commit).
"""

from __future__ import annotations

import datetime
import logging
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, NamedTuple

from django.db import models
from django.utils import timezone

from ..compat import thread_connection
from ..registration.languages import combined, languages_for
from ..units.collector import GoneURL, changes_on_commit, hand_over
from .state import MISSING, ModelInfo, Row, Standing, as_dict, as_written, rebuild
from .state import standing as current_standing

if TYPE_CHECKING:
    from django.db.backends.base.base import BaseDatabaseWrapper

    from ..registration.registry import Plan

#: Every module of the package logs as ``indexnow_django.tracking``.
logger = logging.getLogger(__package__)

__all__ = [
    "DRAFT",
    "Seen",
    "Unseen",
    "change",
    "change_in_transaction",
    "failed",
    "open_change",
    "outcome",
    "see",
    "see_languages",
]


class Seen(NamedTuple):
    """One object as tracking sees it, before or after a change."""

    published: bool
    when: datetime.datetime | None
    public: bool
    urls: tuple[str, ...]


DRAFT = Seen(published=False, when=None, public=False, urls=())


class Unseen(NamedTuple):
    """An object as stored before a change, by its field values, not yet seen: its
    registration says which fields its public state and URLs are read from
    (``url_fields``), and none of them changed when it was recorded.
    """

    #: Its stored row: by attname, or (with ``info``) a sequence in the order of its fields.
    values: Row
    #: What tracking knows of the model (a :class:`~.state.ModelInfo`).
    info: ModelInfo | None = None

    def seen(self, plan: Plan, saved: models.Model) -> Seen | None:
        """How it looked, if that may differ from ``saved`` (``None``: the same): only
        then is the stored object built and seen."""
        current = saved.__dict__
        row = self.values
        info = self.info
        if info is not None:
            urls_of = info.url_values_of
            if urls_of is not None:
                urls_before = urls_of if type(row) is dict else info.url_row_of
                try:
                    if urls_of(current) == urls_before(row):
                        return None
                except KeyError:  # a field deferred: field by field
                    pass
                else:
                    return see(plan, rebuild(saved, as_dict(row, info), info))
            values = as_dict(row, info)
        else:
            values = row  # type: ignore[assignment]
        for attname in plan.url_attnames or ():
            if current.get(attname, MISSING) != values.get(attname, MISSING):
                return see(plan, rebuild(saved, values, info))
        return None


# tuple.__new__: a Seen without the Python-level constructor (this runs twice a save).
_new_seen = tuple.__new__


def see(plan: Plan, obj: Any, now: datetime.datetime | None = None) -> Seen:
    """Evaluate ``obj`` (URLs only when it is public: a draft's are never needed).

    A registration worked out in several languages is seen in each of them
    (:func:`see_languages`).
    """
    options = plan.options
    languages = languages_for(options.languages)
    if languages is not None:
        return see_languages(plan, obj, languages, now)
    if plan.always_public:
        return _new_seen(Seen, (True, None, True, tuple(map(str, options.urls(obj)))))
    published = bool(options.is_published(obj))
    when = options.publish_time(obj) if published else None
    public = published and (when is None or when <= (now or timezone.now()))
    urls = tuple(map(str, options.urls(obj))) if public else ()
    return _new_seen(Seen, (published, when, public, urls))


def see_languages(
    plan: Plan, obj: Any, languages: Sequence[str], now: datetime.datetime | None = None
) -> Seen:
    """``obj`` in each of ``languages``, as one :class:`Seen`: published in some language,
    public when no published language waits for its time (the earliest such time is
    ``when``), and the URLs of every language it is public in.
    """
    return _new_seen(Seen, combined(plan.options.states(obj, languages, now)))


def failed(instance: models.Model, what: str, error: Exception) -> None:
    """Log what went wrong for ``instance`` (its ``urls()`` raising, say); the caller carries on."""
    logger.error(
        "IndexNow could not %s model=%s pk=%s; nothing is submitted for this object",
        what,
        instance._meta.label,
        instance.pk,
        exc_info=error,
    )


def outcome(
    plan: Plan, before: Seen | Unseen | None, saved: models.Model, counts: bool, using: str
) -> list[str]:
    """The URLs a change submits (see the change table), scheduling a future publication.

    ``before``: the object as stored before the change (``None``: the same as
    ``saved``). ``counts``: whether a field that ``fields`` lists changed (or
    ``fields`` is ``None``); a change of public state or of URLs counts anyway.
    """
    if isinstance(before, Unseen):
        before = before.seen(plan, saved)
    after = see(plan, saved)
    old = after if before is None else before
    if not counts and old == after:
        return []
    urls = list(after.urls)
    if old.urls != after.urls:  # URLs are only ever seen for an object public somewhere
        urls.extend([GoneURL(u) for u in old.urls if u not in after.urls])
    if after.published and after.when is not None and not after.public:  # still to come
        from ..units.scheduling import schedule

        schedule(plan.options, saved, after.when, using=using)
    return urls


# One change per object and transaction ------------------------------------------------


class _OpenChange:
    """An object changed inside a transaction: worked out when it commits.

    Each change of the object hands it to the commit again, with what tells
    whether that change stands (changes made at one depth of savepoints share
    it, and a piece of the commit) and the object as that change left it; the
    first hand-over worked out works the change out, from the state before the
    first change to the state the last change still standing recorded, the
    others find it done. So a rolled-back savepoint loses its own hand-overs and
    what they recorded, and Django's ``captureOnCommitCallbacks``, which runs
    only the callbacks registered in its block, still sees it (each hand-over
    registers the commit's callback there).
    """

    __slots__ = (
        "before",
        "counts",
        "done",
        "info",
        "more",
        "plan",
        "saved",
        "standing",
        "using",
        "values",
    )

    def __init__(
        self,
        plan: Plan,
        before: Seen | Unseen | None,
        using: str,
        info: ModelInfo | None,
        standing: Standing,
        saved: models.Model,
        values: dict[str, Any] | None,
        counts: bool,
    ) -> None:
        self.plan = plan
        self.before = before
        self.using = using
        #: What tracking knows of the model, if the caller had it at hand.
        self.info = info
        self.done = False
        #: Its first change: whether it still stands (its savepoint did not roll back),
        #: the object, the values it saved (``None``: the object is a copy made then),
        #: and whether a field of ``fields`` changed; the changes after it, if any, in
        #: ``more`` as such tuples (most objects change once in a transaction).
        self.standing = standing
        self.saved = saved
        self.values = values
        self.counts = counts
        self.more: list[tuple[Standing, models.Model, dict[str, Any] | None, bool]] | None = None

    def add(
        self, standing: Standing, saved: models.Model, values: dict[str, Any] | None, counts: bool
    ) -> None:
        """One more change of the object in the transaction."""
        if self.more is None:
            self.more = []
        self.more.append((standing, saved, values, counts))

    def open(self) -> bool:
        return not self.done and (
            self.standing.stands() or any(change[0].stands() for change in self.more or ())
        )

    def resolve(self) -> list[str]:
        if self.done:
            return []
        self.done = True
        more = self.more
        if more is None:  # the usual: one change of the object in the transaction
            if not self.standing.stands():
                return []
            saved, values, counts = self.saved, self.values, self.counts
        else:
            first = (self.standing, self.saved, self.values, self.counts)
            standing = [change for change in (first, *more) if change[0].stands()]
            if not standing:
                return []
            _kept, saved, values, counts = standing[-1]
            if not counts:
                counts = any(change[3] for change in standing)
        try:
            if values is not None:
                saved = as_written(saved, values, self.info)  # not edits made since, unsaved
            return outcome(self.plan, self.before, saved, counts, self.using)
        except Exception as error:
            failed(saved, "work out the URLs of a save", error)
            return []

    #: As a piece of its commit (see :func:`~indexnow_django.units.collector.changes_on_commit`).
    __call__ = resolve


def open_change(obj: models.Model, connection: BaseDatabaseWrapper) -> _OpenChange | None:
    """The change of ``obj`` still waiting for the current transaction, if any."""
    commit = changes_on_commit(connection, start=False)
    waiting = commit.changes if commit is not None else None
    if not waiting:
        return None
    of_model = waiting.get(obj._meta.concrete_model)
    entry: _OpenChange | None = of_model.get(obj.pk) if of_model is not None else None
    return entry if entry is not None and entry.open() else None


def change(
    plan: Plan,
    before: Seen | Unseen | None,
    saved: models.Model,
    counts: bool,
    using: str,
    *,
    copy_saved: bool = True,
    standing: Standing | None = None,
    values: dict[str, Any] | None = None,
    connection: BaseDatabaseWrapper | None = None,
) -> None:
    """Submit what a change of ``saved`` means, now or when its transaction commits.

    ``copy_saved``: ``saved`` is the caller's instance, which may be edited
    before the commit; what was saved is kept (``values``, by attname, or a copy
    of its values) and the object is rebuilt from it at the commit if it was
    edited since. ``standing``: inside a transaction, what tells whether the
    change still stands (made here when not given). Never raises.
    """
    if connection is None:
        connection = thread_connection(using)
    if not connection.in_atomic_block:
        try:
            urls = outcome(plan, before, saved, counts, using)
        except Exception as error:
            failed(saved, "work out the URLs of a save", error)
            return
        if urls:
            hand_over(urls, connection)
        return
    if not copy_saved:
        values = None
    elif values is None:
        values = saved.__dict__.copy()
    if standing is None:
        standing = current_standing(connection)
    change_in_transaction(plan, before, saved, counts, using, standing, values, connection)


def change_in_transaction(
    plan: Plan,
    before: Seen | Unseen | None,
    saved: models.Model,
    counts: bool,
    using: str,
    standing: Standing,
    values: dict[str, Any] | None,
    connection: BaseDatabaseWrapper,
    info: ModelInfo | None = None,
) -> None:
    """:func:`change` inside a transaction on ``connection``: worked out when it commits.

    ``standing``: whether the change still stands; ``values``: what the change saved,
    by attname (``None``: ``saved`` is a copy made then); ``info``: what tracking
    knows of the model, if the caller has it at hand.
    """
    commit = changes_on_commit(connection, start=True, standing=standing)
    assert commit is not None
    # By model, then by primary key (a key of two would be kept until the commit).
    model = saved._meta.concrete_model
    waiting = commit.changes.get(model)
    if waiting is None:
        waiting = commit.changes[model] = {}
    pk = saved.pk
    entry: _OpenChange | None = waiting.get(pk)
    if entry is None or not entry.open():
        entry = _OpenChange(plan, before, using, info, standing, saved, values, counts)
        waiting[pk] = entry
    else:
        entry.add(standing, saved, values, counts)
    commit.collect(connection, entry, standing)
