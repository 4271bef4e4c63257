"""``IndexNowMiddleware``: each request is one unit of work, under WSGI and ASGI.

The URLs that a request's saves and deletes produce are flushed once. Under
WSGI that happens when the server closes the response, after its last byte
went out: the client never waits for the flush (the enqueue, or the send in
synchronous dispatch). Under ASGI the flush runs when the view has returned,
before the response is sent, since Django's ASGI handler does not close the
response of a client that went away; it runs off the event loop, in asgiref's
thread-sensitive thread, where the ORM may run the queries of the registrations'
``urls()``. Flushing never turns a request into an error.

With ``CRAWL["ENABLED"]``, a request from an engine's crawler is noticed once its
response is built (:mod:`indexnow_django.crawl.notice`): one user-agent test for any
request, one Redis write for a crawler's.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction, sync_to_async
from django.core.exceptions import MiddlewareNotUsed
from django.http import HttpRequest
from django.http.response import HttpResponseBase

from . import compat
from .checks import middleware_without_app
from .crawl.notice import keep, sighting
from .units.collector import unit

logger = logging.getLogger(__name__)

__all__ = ["IndexNowMiddleware"]

_GetResponse = Callable[[HttpRequest], Any]


class IndexNowMiddleware:
    """Collect the URLs a request changes and flush them once when it ends.

    Works in a synchronous and an asynchronous middleware chain; under ASGI
    each request has its own collector (a context variable), so concurrent
    requests never see each other's URLs.
    """

    sync_capable = True
    async_capable = True

    def __init__(self, get_response: _GetResponse) -> None:
        problem = middleware_without_app()
        if problem:
            logger.warning("%s", problem)
            raise MiddlewareNotUsed(problem)
        self.get_response = get_response
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self.__acall__(request)
        response: HttpResponseBase | None = None
        with unit("request") as collector:
            try:
                response = self.get_response(request)
            finally:
                # Once the server has sent the response and closes it (a WSGI
                # server always does): the client does not wait for the flush.
                if response is None or not compat.run_after_response(
                    response, functools.partial(collector.flush, after_response=True)
                ):
                    collector.flush(response=response)
        seen = sighting(request, response)  # crawl receipts: one user-agent test
        if seen is not None:
            keep(seen)
        return response

    async def __acall__(self, request: HttpRequest) -> HttpResponseBase:
        response: HttpResponseBase | None = None
        get_response: Callable[[HttpRequest], Awaitable[HttpResponseBase]] = self.get_response
        with unit("request") as collector:
            try:
                response = await get_response(request)
            finally:
                # Not on the event loop: the URLs of the request's saves are worked out
                # here (the registrations' urls() may query the database, which the ORM
                # refuses in an event loop) and dispatch may talk to Redis (one enqueue).
                await sync_to_async(collector.flush, thread_sensitive=True)(response=response)
        seen = sighting(request, response)  # crawl receipts: one user-agent test
        if seen is not None:
            await sync_to_async(keep)(seen)
        return response
