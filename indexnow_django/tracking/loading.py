"""Loading: tracked classes keep the row each of their objects was loaded with.

Only the tracked classes are changed (as a field tracker patches the class it
is declared on): their ``from_db``, through which every object loaded by a
query passes, and their ``refresh_from_db`` (and their ``save_base``, the
route of their saves: see :func:`.save.saving_hook`). Untracked models pay nothing.
Loading pays one call and one attribute: nothing is copied or built on load,
the object keeps a reference to the row's values in its ``_indexnow_loaded``
attribute (:data:`~.state.LOADED`: the row's own sequence in the order of the
model's concrete fields, or a dict by attname when fields were deferred), which
its :class:`~.state.TrackedState`, made at its first save, delete or m2m
change, starts from.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from django.db import models
from django.utils.inspect import func_accepts_kwargs, func_supports_parameter

from .state import LOADED, MISSING, ModelInfo, plain_from_db, remember, tracked

__all__ = ["patch_tracked_classes"]

#: What each patched class had of its own before, by (class, attribute): MISSING if nothing.
_patched: dict[tuple[type[models.Model], str], Any] = {}
#: The ``from_db`` hooks in place: what each calls, and the mutable fields it copies.
_loading_hooks: dict[Callable[..., Any], tuple[Callable[..., models.Model], frozenset[str]]] = {}
#: Whether Django passes the queryset's ``fetch_mode`` to ``from_db`` (6.1+).
_DJANGO_PASSES_FETCH_MODE = func_supports_parameter(models.Model.from_db, "fetch_mode")
#: Django's own ``from_db`` (the function of the classmethod).
_DJANGO_FROM_DB: Callable[..., models.Model] = getattr(models.Model.from_db, "__func__")  # noqa: B009
#: The ``refresh_from_db`` hooks in place.
_refresh_hooks: set[Callable[..., Any]] = set()


def patch_tracked_classes(
    classes: Mapping[type[models.Model], ModelInfo],
    saving_hook: Callable[[Callable[..., Any]], Callable[..., Any]],
    outermost: dict[type[models.Model], Callable[..., Any]],
) -> None:
    """Hook ``from_db``, ``refresh_from_db`` and ``save_base`` of ``classes`` (and
    only theirs).

    Undoes the previous hooks first, so the hooked classes follow the registry.
    A model's own ``from_db`` (a documented override) is kept and called. Each
    tracked class gets a hook of its own (it knows how many fields a whole row of
    the class has). ``save_base`` is hooked with ``saving_hook(the class's own)``
    where the class does not inherit a hook already (a subclass's saves go through
    its parent's), and ``outermost`` maps each class to the hook its saves reach
    first.
    """
    # The save hooks of classes that stay tracked stay in place: a save made meanwhile
    # in another thread (a registration while the site runs) is never left untracked.
    staying = {
        key: own for key, own in _patched.items() if key[1] == "save_base" and key[0] in classes
    }
    for (cls, name), own in _patched.items():
        if (cls, name) in staying:
            continue
        if own is MISSING:
            delattr(cls, name)
        else:
            setattr(cls, name, own)
    _patched.clear()
    _patched.update(staying)
    _loading_hooks.clear()
    _refresh_hooks.clear()
    plain_from_db.clear()
    for cls in sorted(classes, key=lambda c: len(c.__mro__)):
        loader = getattr(cls.from_db, "__func__")  # noqa: B009 (the function of the classmethod)
        inherited = _loading_hooks.get(loader)
        if inherited is not None:
            loader = inherited[0]  # a parent's hook: hook what it calls
        plain_from_db[cls] = loader
        hook = _loading_hook(loader, classes[cls].mutable, len(cls._meta.concrete_fields))
        _patch(cls, "from_db", classmethod(hook))
        refresh = cls.refresh_from_db
        if refresh not in _refresh_hooks:
            _patch(cls, "refresh_from_db", _refresh_hook(refresh))
        if not getattr(cls.save_base, "indexnow_hook", False):
            _patch(cls, "save_base", saving_hook(cls.save_base))
    outermost.clear()
    outermost.update({cls: cls.save_base for cls in classes})


def _patch(cls: type[models.Model], name: str, value: Any) -> None:
    _patched[(cls, name)] = cls.__dict__.get(name, MISSING)
    setattr(cls, name, value)


def _loading_hook(
    loader: Callable[..., models.Model], mutable: frozenset[str], whole: int
) -> Callable[..., models.Model]:
    """``from_db`` that calls ``loader`` (the class's own, or Django's) and keeps the row.

    ``whole``: the number of values of a row with no field deferred (the class's
    concrete fields). A row with fewer is kept as a dict by attname.
    """
    # Django 6.1 passes ``fetch_mode=``; a model's own older override may not take
    # it, and then it is not passed on (Django itself does the same).
    django_passes = _DJANGO_PASSES_FETCH_MODE
    takes_fetch_mode = func_supports_parameter(loader, "fetch_mode") or func_accepts_kwargs(loader)
    if mutable or (django_passes and not takes_fetch_mode):
        passes_options = takes_fetch_mode

        def hook(
            cls: type[models.Model], db: str | None, field_names: Any, values: Any, **options: Any
        ) -> models.Model:
            obj = (
                loader(cls, db, field_names, values, **options)
                if passes_options
                else loader(cls, db, field_names, values)
            )
            if mutable:
                # Values that can change in place (JSON): a copy, or "before" would follow them.
                values = [
                    copy.deepcopy(v) if n in mutable else v
                    for n, v in zip(field_names, values, strict=False)
                ]
            obj.__dict__[LOADED] = (
                values if len(values) == whole else dict(zip(field_names, values, strict=True))
            )
            return obj

        _loading_hooks[hook] = (loader, mutable)
        return hook

    # On every page that lists tracked objects: one call and one attribute more than
    # Django's own (nothing copied, nothing built).
    found = _loading_hook_61(loader, whole) if django_passes else _loading_hook_52(loader, whole)
    _loading_hooks[found] = (loader, mutable)
    return found


def _loading_hook_52(
    loader: Callable[..., models.Model], whole: int
) -> Callable[..., models.Model]:
    """The hook for Django 5.2 and 6.0's ``from_db``."""
    if loader is _DJANGO_FROM_DB:
        return _django_loading_hook(whole)

    def from_db(
        cls: type[models.Model], db: str | None, field_names: Any, values: Any
    ) -> models.Model:
        obj = loader(cls, db, field_names, values)
        obj._indexnow_loaded = (  # type: ignore[attr-defined]
            values if len(values) == whole else dict(zip(field_names, values, strict=True))
        )
        return obj

    return from_db


def _django_loading_hook(whole: int) -> Callable[..., models.Model]:
    """The hook of a class that keeps Django's own ``from_db`` (5.2, 6.0): a whole row
    builds the object as Django's does, without a call more (a page listing objects
    loads them all through here); a row with deferred fields goes through Django's."""
    django_from_db = _DJANGO_FROM_DB

    def from_db(
        cls: type[models.Model], db: str | None, field_names: Any, values: Any
    ) -> models.Model:
        if len(values) != whole:
            obj = django_from_db(cls, db, field_names, values)
            obj._indexnow_loaded = dict(zip(field_names, values, strict=True))  # type: ignore[attr-defined]
            return obj
        new = cls(*values)
        state = new._state
        state.adding = False
        state.db = db
        new._indexnow_loaded = values  # type: ignore[attr-defined]
        return new

    return from_db


def _loading_hook_61(
    loader: Callable[..., models.Model], whole: int
) -> Callable[..., models.Model]:
    """The hook for Django 6.1's ``from_db``, which takes the queryset's ``fetch_mode``."""

    def from_db(
        cls: type[models.Model],
        db: str | None,
        field_names: Any,
        values: Any,
        *,
        fetch_mode: Any = None,
    ) -> models.Model:
        obj = loader(cls, db, field_names, values, fetch_mode=fetch_mode)
        obj._indexnow_loaded = (  # type: ignore[attr-defined]
            values if len(values) == whole else dict(zip(field_names, values, strict=True))
        )
        return obj

    return from_db


def _refresh_hook(refresh: Callable[..., None]) -> Callable[..., None]:
    """``refresh_from_db`` that keeps the refreshed values as the object's row."""

    def refresh_from_db(self: models.Model, *args: Any, **kwargs: Any) -> None:
        refresh(self, *args, **kwargs)
        if type(self) in tracked:
            names = kwargs.get("fields", args[1] if len(args) > 1 else None)
            fields: Iterable[models.Field[Any, Any]] = self._meta.concrete_fields
            if names is not None:
                names = set(names)
                fields = [f for f in fields if f.name in names or f.attname in names]
            remember(self, [f.attname for f in fields])

    _refresh_hooks.add(refresh_from_db)
    return refresh_from_db
