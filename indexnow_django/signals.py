"""Signals a site can feed to its metrics: :data:`post_sent` and :data:`url_crawled`.

``post_sent`` is sent once per POST to an engine, whoever posts (a worker's
job, a synchronous send, ``indexnow_submit --sync``), dry runs included, right
after the answer (and after the history record), with these keyword arguments:

* ``engine``: the engine's name (``indexnow``, ``bing``, ``127.0.0.1:8080``);
* ``host``: the host the URLs belong to;
* ``count``: how many URLs the POST carried;
* ``outcome``: ``"accepted"``, ``"retry"``, ``"rejected"`` or ``"dry_run"``, as in
  the history; and once more, ``"failed"``, when URLs are given up for good
  (retries exhausted, or an in-process send that cannot retry): that one is no
  POST of its own, it follows the last one;
* ``status``: the HTTP status, ``None`` for a timeout, a network error or a dry run;
* ``duration``: seconds the POST took (``0.0`` for ``"failed"``);
* ``attempt``: the attempt's number, from 1;
* ``batch_id``: the batch id of the logs and the history.

``url_crawled`` is sent once per crawl receipt recorded (see :mod:`indexnow_django.crawl`):
an engine's verified crawler fetched a URL after its acceptance, with these keyword arguments:

* ``url``: the URL, as it was submitted;
* ``crawler``: ``bingbot``, ``yandexbot``, ``seznambot``, ``yeti`` or ``yepbot``;
* ``engine``: the engine whose accepted POST the fetch followed, as in the history;
* ``at``: when the crawler fetched it (an aware datetime);
* ``after``: seconds from the acceptance to the fetch;
* ``status``: the status the site answered the crawler.

It is sent by the worker that verified the fetch. ``sender`` is ``None`` for both. A
receiver that raises is logged and never stops a delivery, nor the recording of receipts.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from django.dispatch import Signal

from .protocol.client import PostResult

if TYPE_CHECKING:
    from .crawl.models import CrawlReceipt

logger = logging.getLogger(__name__)

__all__ = ["FAILED", "post_sent", "url_crawled"]

post_sent = Signal()
url_crawled = Signal()

#: The ``outcome`` of the signal sent when URLs are given up for good.
FAILED = "failed"


def sent(result: PostResult, *, attempt: int, batch_id: str, dry_run: bool) -> None:
    """Send :data:`post_sent` for one POST."""
    outcome = "dry_run" if dry_run or result.dry_run else result.outcome.value
    _send(result, outcome, result.elapsed, attempt, batch_id)


def given_up(results: Iterable[PostResult], *, attempt: int, batch_id: str) -> None:
    """Send :data:`post_sent` with the outcome ``"failed"`` for each of ``results``: the
    last answers of URLs that are not tried again."""
    for result in results:
        _send(result, FAILED, 0.0, attempt, batch_id)


def _send(result: PostResult, outcome: str, duration: float, attempt: int, batch_id: str) -> None:
    if not post_sent.has_listeners(None):
        return
    answers = post_sent.send_robust(
        None,
        engine=result.engine.name,
        host=result.host,
        count=len(result.urls),
        outcome=outcome,
        status=result.status,
        duration=duration,
        attempt=attempt,
        batch_id=batch_id,
    )
    _log_raised("post_sent", answers, f"batch={batch_id}")


def crawled(receipt: CrawlReceipt) -> None:
    """Send :data:`url_crawled` for one receipt just recorded."""
    if not url_crawled.has_listeners(None):
        return
    answers = url_crawled.send_robust(
        None,
        url=receipt.url,
        crawler=receipt.crawler,
        engine=receipt.engine,
        at=receipt.fetched_at,
        after=receipt.after,
        status=receipt.status,
    )
    _log_raised("url_crawled", answers, f"url={receipt.url}")


def _log_raised(signal: str, answers: list[tuple[Any, Any]], about: str) -> None:
    for receiver, answer in answers:
        if isinstance(answer, Exception):
            logger.warning(
                "IndexNow %s receiver %s raised %s: %s: %s",
                signal,
                getattr(receiver, "__qualname__", receiver),
                about,
                type(answer).__name__,
                answer,
            )
