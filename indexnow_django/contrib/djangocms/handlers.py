"""django CMS's page events turned into URLs for the current unit of work.

Connected by the app's ``ready()`` (:func:`connect`):

``pre_version_operation`` of a ``PageContent`` version: publish or unpublish
    Inside the operation's transaction, before anything changed, the live
    URLs that the operation can change are read: the page's URL in the
    version's language, and those of the pages below it when its path can
    change (an unpublish, a first publish, a new slug or overwritten URL;
    django CMS rewrites the descendants' paths with a bulk update that sends
    no signal). When the transaction commits they are read again, and the
    URLs that changed side (old and new) are submitted, with the page's
    current URL after a publish (so that publishing again counts). A rollback
    drops it all. An unpublish that a publish replaces is that publish's
    business (djangocms-versioning passes ``to_be_published``).
``pre_obj_operation`` ``MOVE_PAGE`` (django CMS's admin)
    The same, for the moved page and its subtree in every language.
``pre_delete`` of a ``Page`` (each page of a deleted subtree)
    The URLs that were live, read from the rows before they are gone, as
    gone; they wait for the deletion's transaction like everything else.

The first look in a transaction stands: a page published twice in one
transaction (or moved, then published) is compared with what was live
before the first. Drafts, archiving and reverting to a draft change nothing
live and cost nothing. Everything goes through
:func:`indexnow_django.units.collector.collect`, so the request, command or job is
one flush, and nothing here raises into django CMS's code.
"""

from __future__ import annotations

import functools
import logging
from dataclasses import dataclass
from typing import Any

from django.db import connections
from django.db.models.signals import pre_delete

from ...conf import is_enabled
from ...units.collector import collect
from ..integration import KeptBefores, Receiver, Receivers, guard
from .pages import LiveURLs, PageURLs

# django CMS's models and signals are imported where they are used: this module
# imports without its apps being ready.

logger = logging.getLogger(__name__)

__all__ = ["connect", "disconnect"]


#: Log, never raise, what goes wrong (django CMS's action carries on).
_guard = functools.partial(guard, logger)


def _using(instance: Any) -> str:
    return instance._state.db or "default"


# What was live before the transaction, what is live after it -----------------


@dataclass
class _Before:
    """The live URLs of a page (in one language or all) before the transaction."""

    language: str | None
    urls: LiveURLs
    #: Whether ``urls`` covers the page's descendants too.
    subtree: bool
    #: Send the page's current URL even when it did not change (a publish).
    published: bool = False


#: Pages changed in the current transaction of each connection, by
#: ``(page pk, language or None)``.
_befores: KeptBefores[_Before] = KeptBefores()


def _follow(page: Any, language: str | None, using: str, *, subtree: bool, published: bool) -> None:
    """Read what is live now under ``page`` and compare it when the transaction commits."""
    connection = connections[using]
    if not connection.in_atomic_block:
        return  # django CMS's operations are atomic: only a bypass gets here
    key = (page.pk, language)
    kept = _befores.get(connection, key)
    urls = PageURLs(using)
    if kept is not None:
        kept.published = kept.published or published
        if subtree and not kept.subtree:
            # The page's own URL was read earlier; its descendants have not moved yet.
            kept.urls = {**urls.subtree(page, language), **kept.urls}
            kept.subtree = True
        return
    before = _Before(
        language,
        urls.subtree(page, language) if subtree else urls.page(page, language),
        subtree,
        published,
    )
    _befores.expect(connection, key, before, functools.partial(_compare, page.pk, using, before))


def _compare(pk: Any, using: str, before: _Before) -> None:
    """After the commit: submit the URLs that changed side, and a published page's."""
    from cms.models import Page

    with _guard("submit the changes of", pk):
        page = Page.objects.using(using).filter(pk=pk).first()
        urls = PageURLs(using)
        if page is None:
            after: LiveURLs = {}
        elif before.subtree:
            after = urls.subtree(page, before.language)
        else:
            after = urls.page(page, before.language)
        old = set(before.urls.values())
        new = set(after.values())
        changed = dict.fromkeys(sorted(old - new))
        changed.update(dict.fromkeys(sorted(new - old)))
        if before.published:
            for (page_pk, _language), url in after.items():
                if page_pk == pk:
                    changed[url] = None
        # What was live and is not any more is gone for the engines (sent again
        # even when the same URL was accepted as live a moment ago).
        collect(list(changed), using, gone=[url for url in changed if url not in new])


# djangocms-versioning's operations -------------------------------------------------


def _path_may_change(content: Any) -> bool:
    """Whether publishing ``content`` can change its page's path in its language.

    django CMS 5.1 derives the path from the published content's slug and
    overwritten URL; a page that has no live path yet brings its descendants
    back with it. Anything this cannot tell counts as a change.
    """
    page = content.page
    if not hasattr(content, "slug") or not hasattr(page, "get_url_data"):
        return True  # django CMS 4.1: the path does not change at publish, but look anyway
    current = page.urls.filter(language=content.language).values_list("path", flat=True).first()
    if current is None:
        return True
    data = page.get_url_data(content.slug, content.overwrite_url, content.language)
    return bool(data.get("path") != current)


def _before_version_operation(
    sender: type[Any], operation: str = "", obj: Any = None, **kwargs: Any
) -> None:
    from djangocms_versioning import constants

    if operation not in (constants.OPERATION_PUBLISH, constants.OPERATION_UNPUBLISH):
        return  # a draft, an archive: nothing live changes
    if operation == constants.OPERATION_UNPUBLISH and kwargs.get("to_be_published") is not None:
        return  # replaced by a new version: the publish that does it follows the page
    if obj is None or not is_enabled():
        return
    with _guard("read the live state of", getattr(obj, "object_id", None)):
        content = obj.content
        page = content.page
        publish = operation == constants.OPERATION_PUBLISH
        subtree = not publish or _path_may_change(content)
        _follow(page, content.language, _using(obj), subtree=subtree, published=publish)


# django CMS's page operations --------------------------------------------------------


def _before_page_operation(
    sender: type[Any], operation: str = "", obj: Any = None, **kwargs: Any
) -> None:
    from cms import operations

    if operation != operations.MOVE_PAGE or obj is None or not is_enabled():
        return
    with _guard("read the live state of", obj.pk):
        _follow(obj, None, _using(obj), subtree=True, published=False)


def _before_delete(
    sender: type[Any], instance: Any, using: str | None = None, **kwargs: Any
) -> None:
    if not is_enabled():
        return
    with _guard("submit the deletion of", instance.pk):
        using = using or _using(instance)
        gone = list(PageURLs(using).page(instance.pk).values())
        collect(gone, using, gone=gone)


# Wiring ----------------------------------------------------------------------------


def _receivers() -> tuple[Receiver, ...]:
    from cms.models import Page, PageContent
    from cms.signals import pre_obj_operation
    from djangocms_versioning.signals import pre_version_operation

    return (
        (pre_version_operation, _before_version_operation, PageContent, "pre_version_operation"),
        (pre_obj_operation, _before_page_operation, None, "pre_obj_operation"),
        # Deleting a page (or a subtree) deletes each of its ``Page`` rows.
        (pre_delete, _before_delete, Page, "pre_delete"),
    )


_RECEIVERS = Receivers("indexnow_django.contrib.djangocms", _receivers)
connect = _RECEIVERS.connect
disconnect = _RECEIVERS.disconnect
