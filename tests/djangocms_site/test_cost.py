"""What the integration costs a publish: a few queries, however many pages are below."""

from __future__ import annotations

import time
from collections.abc import Callable
from types import SimpleNamespace

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext

from indexnow_django.conf import get_settings
from indexnow_django.conf import hosts as live_hosts
from indexnow_django.contrib.djangocms import handlers
from tests.djangocms_site.fixtures import Tree, add, draft, publish, version


def queries(action: Callable[[], None]) -> int:
    with CaptureQueriesContext(connection) as captured:
        action()
    return len(captured.captured_queries)


def publish_costs(tree: Tree) -> dict[str, int]:
    """Queries of a publish again, a publish with a new slug, an unpublish."""
    draft(tree.news, tree.user, title="News again")
    again = queries(lambda: publish(tree.news, tree.user))
    draft(tree.about, tree.user, slug=f"about-{again}")
    renamed = queries(lambda: publish(tree.about, tree.user))
    unpublished = queries(lambda: version(tree.about, "en", "published").unpublish(tree.user))
    version(tree.about, "en", "unpublished").copy(tree.user)  # back, for the next round
    publish(tree.about, tree.user)
    return {"again": again, "renamed": renamed, "unpublished": unpublished}


@pytest.mark.indexnow(HISTORY={"ENABLED": False})  # the queries of a publish and its send alone
def test_a_publish_costs_a_few_queries_whatever_the_subtree(
    tree: Tree, engine, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The hosts are read again after a few seconds, and a second after a read when a
    # site changes: on a busy machine such a read would fall in one of the rounds
    # compared. Their clock stands still for the test: read once, they stay.
    get_settings().hosts  # noqa: B018
    now = time.monotonic()
    monkeypatch.setattr(live_hosts, "time", SimpleNamespace(monotonic=lambda: now))
    for n in range(20):
        add(tree.user, f"Member {n}", f"member-{n}", tree.team)
    handlers.disconnect()
    try:
        without = publish_costs(tree)
    finally:
        handlers.connect()
    engine.reset()

    with_integration = publish_costs(tree)

    extra = {name: with_integration[name] - without[name] for name in without}
    # Before: the URL row (publish), the sites, the live URLs; after the commit:
    # the page, the sites, the live URLs. The sent URLs prove it looked at all 21.
    assert extra == {"again": 6, "renamed": 6, "unpublished": 5}, (with_integration, without)
    # news; about and its 21 pages below, old and new; the 22 taken offline; back again.
    assert len(engine.posted_urls()) == 1 + 2 * 22 + 22 + 22
