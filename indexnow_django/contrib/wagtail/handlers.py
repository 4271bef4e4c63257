"""Wagtail's page events turned into URLs for the current unit of work.

Connected by the app's ``ready()`` (:func:`connect`), for every page type:

``pre_save`` / ``post_save`` of a page
    Before the first save in a transaction that can change where a page is
    public (publish, unpublish, expiry, a move, a slug change), the stored
    row says what was live: its public URLs, and, when the page's
    ``url_path`` is about to change, those of its live descendants (Wagtail
    rewrites their paths with a bulk update that sends no signal). A page
    created in the transaction had none. When the transaction commits, the
    page and its descendants are read again, and the URLs that changed side
    are submitted: the old ones and the new ones. A state that lived only
    inside the transaction (the admin creates a page live, then schedules
    it) is never submitted. Draft saves (which only touch Wagtail's revision
    bookkeeping) cost nothing.
``page_published``
    The page's current public URLs, so that publishing again (no URL change)
    is submitted too. A publish scheduled for later sends nothing (the page is
    not live yet); ``publish_scheduled`` publishes it and this runs then.
``pre_delete`` of a page (each page of a deleted subtree)
    The URLs that were public, read from the row before it is gone.
a view restriction saved or deleted
    A new restriction submits the pages that it hides (they are gone for the
    engines); a removed one submits the pages that are public again, once
    the transaction commits.

Everything goes through :func:`indexnow_django.units.collector.collect`, so the
request, command or job is one flush, URLs wait for their transaction to
commit, and a rollback drops them. Nothing here raises into Wagtail's code.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django.db import connections, transaction
from django.db.models.signals import class_prepared, post_delete, post_save, pre_delete, pre_save

from ...conf import is_enabled
from ...units.collector import collect
from ..integration import KeptBefores, Receiver, Receivers, guard
from .pages import PageURLs

if TYPE_CHECKING:
    from wagtail.models import PageViewRestriction

# Wagtail's models are imported where they are used: this module imports
# without Wagtail's apps being ready.

logger = logging.getLogger(__name__)

__all__ = ["connect", "disconnect"]

#: A save whose ``update_fields`` name none of these cannot change a page's URLs
#: or whether it is live (Wagtail's draft saves name only revision bookkeeping).
URL_FIELDS = frozenset({"live", "slug", "url_path", "path", "depth"})


#: Log, never raise, what goes wrong (Wagtail's action carries on).
_guard = functools.partial(guard, logger)


def _using(instance: Any, using: str | None = None) -> str:
    return using or instance._state.db or "default"


# Saves: what was live before the transaction, what is live after it ----------


@dataclass
class _Before:
    """A page as it was before the transaction that saves it (first save wins)."""

    urls: tuple[str, ...]
    #: Public URLs of its live descendants, read before its path changed
    #: (``None``: its path has not changed in this transaction).
    descendants: list[str] | None = None


#: Pages saved in the current transaction of each connection, by primary key.
_befores: KeptBefores[_Before] = KeptBefores()


def _expect(connection: Any, using: str, pk: Any, before: _Before) -> None:
    """Compare page ``pk`` against ``before`` once the current transaction commits."""
    _befores.expect(connection, pk, before, functools.partial(_compare, pk, using, before))


def _before_save(
    sender: type[Any],
    instance: Any,
    raw: bool = False,
    using: str | None = None,
    update_fields: Any = None,
    **kwargs: Any,
) -> None:
    from wagtail.models import Page

    if raw or not isinstance(instance, Page) or instance._state.adding or not is_enabled():
        return  # a new page is expected by _after_save, once it has a primary key
    if update_fields is not None and not URL_FIELDS.intersection(update_fields):
        return
    using = _using(instance, using)
    connection = connections[using]
    if not connection.in_atomic_block:
        return  # Page.save() is atomic: only a save that bypasses it gets here
    with _guard("read the stored state of", instance.pk):
        kept = _befores.get(connection, instance.pk)
        if kept is not None and kept.descendants is not None:
            return  # saved before in this transaction: that "before" stands
        stored = Page.objects.using(using).filter(pk=instance.pk).first()
        if stored is None:
            return
        moves = stored.url_path != instance.url_path
        if kept is not None:
            if moves:  # its path changes only now: its descendants' old URLs are still stored
                kept.descendants = PageURLs(using).subtree_urls(stored, include_page=False)
            return
        if not moves and stored.live == instance.live:
            return  # neither its URLs nor whether it is live can change
        urls = PageURLs(using)
        before = _Before(
            tuple(urls.urls(stored)),
            urls.subtree_urls(stored, include_page=False) if moves else None,
        )
        _expect(connection, using, instance.pk, before)


def _after_save(
    sender: type[Any],
    instance: Any,
    created: bool = False,
    raw: bool = False,
    using: str | None = None,
    **kwargs: Any,
) -> None:
    from wagtail.models import Page

    if not created or raw or not isinstance(instance, Page) or not instance.live:
        return  # a page created as a draft is read as stored when it is published
    if not is_enabled():
        return
    using = _using(instance, using)
    connection = connections[using]
    if connection.in_atomic_block:
        # A page created live had no URL before: whatever it has once committed is
        # new, and a later save in the same transaction (the admin schedules it) keeps
        # this "before".
        with _guard("follow the creation of", instance.pk):
            _expect(connection, using, instance.pk, _Before(()))


def _compare(pk: Any, using: str, before: _Before) -> None:
    """After the commit: submit the page's URLs that changed side, and its descendants'."""
    from wagtail.models import Page

    with _guard("submit the changes of", pk):
        page = Page.objects.using(using).filter(pk=pk).first()
        urls = PageURLs(using)
        new = urls.urls(page) if page is not None else []
        changed: list[str] = []
        if set(before.urls) != set(new):
            changed += [*before.urls, *new]
        if before.descendants is not None:
            changed += before.descendants
            if page is not None:
                descendants = urls.subtree_urls(page, include_page=False)
                changed += descendants
                new = [*new, *descendants]
        # What was live and is not any more is gone for the engines (sent again
        # even when the same URL was accepted as public a moment ago).
        live = set(new)
        collect(changed, using, gone=[url for url in changed if url not in live])


# Publishing and deleting -------------------------------------------------------


def _published(sender: type[Any], instance: Any, **kwargs: Any) -> None:
    if not is_enabled():
        return
    with _guard("submit the publication of", instance.pk):
        using = _using(instance)
        collect(PageURLs(using).urls(instance), using)


def _before_delete(
    sender: type[Any], instance: Any, using: str | None = None, **kwargs: Any
) -> None:
    from wagtail.models import Page

    if not is_enabled():
        return
    with _guard("submit the deletion of", instance.pk):
        using = _using(instance, using)
        # The instance Django's deletion collector hands over may be one it built
        # from a child page's parent link, without the stored values: read the row.
        stored = Page.objects.using(using).filter(pk=instance.pk).first()
        if stored is not None:
            gone = PageURLs(using).urls(stored)
            collect(gone, using, gone=gone)


# View restrictions ---------------------------------------------------------------


def _restriction_saved(
    sender: type[Any],
    instance: PageViewRestriction,
    created: bool = False,
    raw: bool = False,
    using: str | None = None,
    **kwargs: Any,
) -> None:
    from wagtail.models import Page, PageViewRestriction

    if raw or not created or instance.restriction_type == PageViewRestriction.NONE:
        return
    if not is_enabled():
        return
    with _guard("submit the restriction of", instance.page_id):
        using = _using(instance, using)
        page = Page.objects.using(using).filter(pk=instance.page_id).first()
        if page is None:
            return
        # What was public until this restriction: hidden now, gone for the engines.
        gone = PageURLs(using, ignore_restriction=instance.pk).subtree_urls(page)
        collect(gone, using, gone=gone)


def _restriction_deleted(
    sender: type[Any], instance: PageViewRestriction, using: str | None = None, **kwargs: Any
) -> None:
    from wagtail.models import Page

    if not is_enabled():
        return
    with _guard("submit the end of the restriction of", instance.page_id):
        using = _using(instance, using)
        path = (
            Page.objects.using(using)
            .filter(pk=instance.page_id)
            .values_list("path", flat=True)
            .first()
        )
        if path is None:
            return
        # Read after the commit: pages deleted with their restriction are gone then.
        transaction.on_commit(
            functools.partial(_public_again, path, using), using=using, robust=True
        )


def _public_again(path: str, using: str) -> None:
    from wagtail.models import Page

    with _guard("submit the pages made public under", path):
        page = Page.objects.using(using).filter(path=path).first()
        if page is not None:
            collect(PageURLs(using).subtree_urls(page), using)


# Wiring ----------------------------------------------------------------------------


def _page_types() -> list[type[Any]]:
    """Every page type (each is its own model class), those created later included."""
    from django.apps import apps
    from wagtail.models import Page

    return [model for model in apps.get_models() if issubclass(model, Page)]


def _save_receivers(page_type: type[Any]) -> tuple[Receiver, Receiver]:
    label = page_type._meta.label_lower
    return (
        (pre_save, _before_save, page_type, f"pre_save.{label}"),
        (post_save, _after_save, page_type, f"post_save.{label}"),
    )


def _receivers() -> tuple[Receiver, ...]:
    from wagtail.models import Page, PageViewRestriction
    from wagtail.signals import page_published

    return (
        # The saves of each page type, and of no other model (a site's other saves pay
        # nothing for the integration).
        *(receiver for page_type in _page_types() for receiver in _save_receivers(page_type)),
        (page_published, _published, None, "page_published"),
        # Deleting any page (or a subtree) deletes its base ``Page`` row.
        (pre_delete, _before_delete, Page, "pre_delete"),
        (post_save, _restriction_saved, PageViewRestriction, "restriction_saved"),
        (post_delete, _restriction_deleted, PageViewRestriction, "restriction_deleted"),
    )


_RECEIVERS = Receivers("indexnow_django.contrib.wagtail", _receivers)
_PREPARED_UID = f"{_RECEIVERS.uid}.class_prepared"


def connect() -> None:
    """Connect the handlers (the app's ``ready()`` calls this), and those of a page type
    created later when it is."""
    _RECEIVERS.connect()
    class_prepared.connect(_page_type_prepared, dispatch_uid=_PREPARED_UID)


def disconnect() -> None:
    """Disconnect the handlers."""
    class_prepared.disconnect(dispatch_uid=_PREPARED_UID)
    _RECEIVERS.disconnect()


def _page_type_prepared(sender: type[Any], **kwargs: Any) -> None:
    """``class_prepared``: a page type created after start-up gets its save handlers."""
    from django.apps import apps
    from wagtail.models import Page

    if issubclass(sender, Page) and sender._meta.apps is apps:
        # Not in the app registry yet (Django registers a class after preparing it).
        for receiver in _save_receivers(sender):
            _RECEIVERS.connect_one(receiver)
