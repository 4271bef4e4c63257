"""Jobs of the test site's own: they save tracked objects, like a site's import job."""

from __future__ import annotations

from django.db import transaction

from tests.testapp.models import Page


def save_pages(paths: list[str]) -> int:
    """Create one ``Page`` per path, each save committed on its own."""
    for path in paths:
        Page.objects.create(path=path)
    return len(paths)


def save_pages_then_fail(paths: list[str]) -> None:
    """Commit the pages, then fail: the committed saves are still submitted."""
    save_pages(paths)
    raise RuntimeError("the job failed after saving")


def save_pages_in_a_rolled_back_transaction(paths: list[str]) -> None:
    """Nothing is committed, so nothing is submitted."""
    with transaction.atomic():
        save_pages(paths)
        transaction.set_rollback(True)
