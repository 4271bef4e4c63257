"""Bulk changes, which Django makes without signals: ``update()``, ``bulk_create()``,
``bulk_update()``, and :func:`submit_objects` for objects chosen by hand.

A model whose manager comes from :class:`IndexNowQuerySet` (or a custom
queryset with :class:`IndexNowQuerySetMixin`) submits for its bulk operations
what its saves would submit, following the change table: each operation runs
in one transaction, reads the stored rows it changes before and after (in
chunks, so memory stays bounded by the rows it touches), and hands all their
URLs over at once, so they leave in one flush. On a model that is not
registered, or with ``ENABLED`` false, the operations are Django's own.
"""

from __future__ import annotations

import contextlib
import inspect
from collections.abc import Iterable, Iterator
from itertools import islice
from typing import TYPE_CHECKING, Any, TypeVar

from django.db import connections, models, transaction
from django.db.models import Q

from ..conf import is_enabled
from ..exceptions import RegistrationError
from ..tracking import DRAFT, Seen, fields_changed, rebuilt, state_of, urls_of_change
from ..units.collector import batch, collect, current, hand_over
from .registry import Plan, plan_for

if TYPE_CHECKING:
    _Base = models.QuerySet[Any]
else:
    _Base = object

__all__ = ["IndexNowQuerySet", "IndexNowQuerySetMixin", "submit_objects"]

#: Rows read per query (well under SQLite's limit of parameters per query).
CHUNK = 500

#: ``QuerySet.bulk_create``'s arguments, to read its options however they are passed.
_BULK_CREATE = inspect.signature(models.QuerySet.bulk_create)

_M = TypeVar("_M", bound=models.Model)


def _chunks(items: Iterable[Any], size: int = CHUNK) -> Iterator[list[Any]]:
    iterator = iter(items)
    while chunk := list(islice(iterator, size)):
        yield chunk


def _attnames(model: type[models.Model], names: Iterable[str]) -> set[str]:
    return {model._meta.get_field(name).attname for name in names}  # type: ignore[union-attr]


class IndexNowQuerySetMixin(_Base):
    """Bulk operations that submit what they change, for a queryset of a registered model."""

    def _indexnow_plan(self) -> Plan | None:
        return plan_for(self.model) if is_enabled() else None

    def _indexnow_stored(self, pks: Iterable[Any]) -> Iterator[models.Model]:
        manager = self.model._base_manager.db_manager(self.db)
        for chunk in _chunks(pks):
            yield from manager.filter(pk__in=chunk)

    def update(self, **kwargs: Any) -> int:
        """``QuerySet.update()``, submitting the old and new URLs of the rows it changes."""
        plan = self._indexnow_plan()
        if plan is None:
            return super().update(**kwargs)
        db = self.db
        attnames = _attnames(self.model, kwargs)
        with transaction.atomic(using=db, savepoint=False):
            # Per row: how it looked and the values of the fields the update writes.
            before: dict[Any, tuple[Seen, dict[str, Any]]] = {}
            pks = list(self.values_list("pk", flat=True))
            for obj in self._indexnow_stored(pks):
                seen = state_of(plan, obj)
                if seen is not None:
                    before[obj.pk] = (seen, {a: getattr(obj, a) for a in attnames})
            updated = super().update(**kwargs)
            urls: list[str] = []
            for obj in self._indexnow_stored(before):
                seen, values = before[obj.pk]
                changed = {a for a in attnames if getattr(obj, a) != values[a]}
                urls.extend(urls_of_change(plan, seen, obj, fields_changed(plan, changed), db))
            if urls:
                hand_over(urls, connections[db])
        return updated

    def bulk_create(self, objs: Iterable[_M], *args: Any, **kwargs: Any) -> list[_M]:
        """``QuerySet.bulk_create()``, submitting the URLs of the public objects it creates.

        With ``update_conflicts=True`` (an upsert) the rows it updates follow the change
        table (old and new URLs when they changed); with ``ignore_conflicts=True`` the
        rows that were there already submit nothing. Rows are matched by
        ``unique_fields`` (else by the primary key or the first unique key that every
        object gives), read before and after in chunks.
        """
        plan = self._indexnow_plan()
        if plan is None:
            return super().bulk_create(objs, *args, **kwargs)
        db = self.db
        options = _BULK_CREATE.bind(self, objs, *args, **kwargs).arguments
        conflicts = options.get("update_conflicts") or options.get("ignore_conflicts")
        objs = list(objs)
        key = self._indexnow_key(objs, options.get("unique_fields")) if conflicts else None
        with transaction.atomic(using=db, savepoint=False):
            stored = self._indexnow_by_key(key, objs) if key else {}
            created = super().bulk_create(objs, *args, **kwargs)
            urls: list[str] = []
            if key:
                urls = self._indexnow_upserted(plan, key, objs, stored, options)
            else:
                for obj in created:
                    urls.extend(urls_of_change(plan, DRAFT, obj, True, db))
            if urls:
                hand_over(urls, connections[db])
        return created

    def _indexnow_key(self, objs: list[Any], unique_fields: Any) -> tuple[str, ...] | None:
        """The attnames by which an upsert matches rows (``None``: none it can tell)."""
        meta = self.model._meta
        if unique_fields:
            return tuple(
                meta.pk.attname if name == "pk" else meta.get_field(name).attname
                for name in unique_fields
            )
        # ignore_conflicts (or MySQL's upsert): any unique key may conflict; the objects
        # are matched by the first that all of them give.
        candidates = [
            (meta.pk.attname,),
            *((f.attname,) for f in meta.concrete_fields if f.unique and not f.primary_key),
            *(
                tuple(meta.get_field(name).attname for name in constraint.fields)
                for constraint in meta.total_unique_constraints
            ),
        ]
        for attnames in candidates:
            if objs and all(getattr(o, a) is not None for o in objs for a in attnames):
                return attnames
        return None  # nothing to match them by: new rows as far as can be told

    def _indexnow_by_key(
        self, key: tuple[str, ...], objs: Iterable[Any]
    ) -> dict[tuple[Any, ...], models.Model]:
        """The stored rows whose ``key`` values are those of ``objs``, by those values."""
        manager = self.model._base_manager.db_manager(self.db)
        found: dict[tuple[Any, ...], models.Model] = {}
        values = list(dict.fromkeys(tuple(getattr(o, a) for a in key) for o in objs))
        for chunk in _chunks(values, CHUNK // len(key)):
            if len(key) == 1:
                rows = manager.filter(**{f"{key[0]}__in": [v[0] for v in chunk]})
            else:
                match = Q()
                for value in chunk:
                    match |= Q(**dict(zip(key, value, strict=True)))
                rows = manager.filter(match)
            for row in rows:
                found[tuple(getattr(row, a) for a in key)] = row
        return found

    def _indexnow_upserted(
        self,
        plan: Plan,
        key: tuple[str, ...],
        objs: list[Any],
        stored: dict[tuple[Any, ...], models.Model],
        options: dict[str, Any],
    ) -> list[str]:
        """The URLs of an upsert: rows created, and rows updated from how they were stored."""
        db = self.db
        now = self._indexnow_by_key(key, objs)
        written = (
            _attnames(self.model, options.get("update_fields") or ())
            if options.get("update_conflicts")
            else set()
        )
        urls: list[str] = []
        for value, row in now.items():
            old = stored.get(value)
            if old is None:
                urls.extend(urls_of_change(plan, DRAFT, row, True, db))
                continue
            changed = {a for a in written if getattr(old, a) != getattr(row, a)}
            if not changed:
                continue  # left as it was (ignore_conflicts, or the same values)
            seen = state_of(plan, old)
            if seen is not None:
                urls.extend(urls_of_change(plan, seen, row, fields_changed(plan, changed), db))
        return urls

    def bulk_update(
        self, objs: Iterable[Any], fields: Iterable[str], batch_size: int | None = None
    ) -> int:
        """``QuerySet.bulk_update()``, submitting the old and new URLs of the rows it changes."""
        plan = self._indexnow_plan()
        if plan is None:
            return super().bulk_update(objs, fields, batch_size)
        db = self.db
        objs, fields = list(objs), list(fields)
        attnames = _attnames(self.model, fields)
        with transaction.atomic(using=db, savepoint=False):
            stored = {obj.pk: obj for obj in self._indexnow_stored(o.pk for o in objs)}
            updated = super().bulk_update(objs, fields, batch_size)
            urls: list[str] = []
            for obj in objs:
                old = stored.get(obj.pk)
                if old is None:
                    continue
                seen = state_of(plan, old)
                if seen is None:
                    continue
                values = {a: getattr(obj, a) for a in attnames}
                changed = {a for a, value in values.items() if getattr(old, a) != value}
                saved = rebuilt(old, values)
                urls.extend(urls_of_change(plan, seen, saved, fields_changed(plan, changed), db))
            if urls:
                hand_over(urls, connections[db])
        return updated


class IndexNowQuerySet(IndexNowQuerySetMixin, models.QuerySet[Any]):
    """A queryset whose bulk operations submit what they change::

    objects = IndexNowQuerySet.as_manager()
    """


def submit_objects(objs: Iterable[models.Model]) -> int:
    """Submit the current URLs of the public objects among ``objs`` (any iterable or queryset).

    The URLs join the current unit of work, or are flushed together at the
    end of the call outside any. A queryset is read in chunks. Every object's
    model must be registered (or a subclass of a registered one): the first
    that is not raises :class:`~indexnow_django.exceptions.RegistrationError`
    before anything is submitted. Returns how many URLs were handed over.
    """
    if isinstance(objs, models.QuerySet):
        objs = objs.iterator(chunk_size=CHUNK)
    urls: list[str] = []
    plans: dict[type[models.Model], Plan] = {}
    for obj in objs:
        model = type(obj)
        plan = plans.get(model) or plan_for(model)
        if plan is None:
            raise RegistrationError(
                f"submit_objects() got a {model._meta.label} object, a model that is not "
                "registered with IndexNow."
            )
        plans[model] = plan
        seen = state_of(plan, obj)
        if seen is not None:
            urls.extend(seen.urls)
    if not urls or not is_enabled():
        return 0
    unit = current()
    with contextlib.nullcontext() if unit is not None and unit.accepts() else batch():
        collect(urls)
    return len(urls)
