"""What bulk operations use (:mod:`indexnow_django.registration.queryset`): they read the
stored rows themselves, before and after, and hand over the URLs of all their changes at
once."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from django.db import models
from django.utils import timezone

from .outcome import Seen, failed, outcome, see
from .state import rebuild

if TYPE_CHECKING:
    from ..registration.registry import Plan

__all__ = ["rebuilt", "state_of", "urls_of_change"]


def state_of(plan: Plan, obj: models.Model) -> Seen | None:
    """How ``obj`` looks to the engines now (``None``: its options raised, which is logged)."""
    try:
        return see(plan, obj, timezone.now())
    except Exception as error:
        failed(obj, "work out the stored state before a save", error)
        return None


def urls_of_change(
    plan: Plan, before: Seen | None, saved: models.Model, counts: bool, using: str
) -> list[str]:
    """The URLs that a change of ``saved`` from ``before`` submits (see the change table).

    ``before`` is :data:`~.outcome.DRAFT` for a new row; ``counts`` says whether
    a field in ``fields`` changed. Never raises (a failure is logged).
    """
    try:
        return outcome(plan, before, saved, counts, using)
    except Exception as error:
        failed(saved, "work out the URLs of a save", error)
        return []


def rebuilt(obj: models.Model, values: Mapping[str, Any]) -> models.Model:
    """A copy of ``obj`` holding ``values`` (by attname) where it has them."""
    return rebuild(obj, {**obj.__dict__, **values})
