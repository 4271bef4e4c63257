from __future__ import annotations

import asyncio

from django.http import HttpRequest, HttpResponse

from indexnow_django import submit
from tests.testapp.models import Page, Post, Story


class Gate:
    """Lets tasks through once ``parties`` of them wait (``asyncio.Barrier`` needs 3.11)."""

    def __init__(self, parties: int) -> None:
        self.parties = parties
        self.waiting = 0
        self.open = asyncio.Event()

    async def wait(self) -> None:
        self.waiting += 1
        if self.waiting >= self.parties:
            self.open.set()
        await self.open.wait()


#: Set by a test: async views wait on it after saving, so that every request
#: is still running (with its URLs collected) when the first one finishes.
BARRIER: Gate | None = None


def save_post(request: HttpRequest, pk: int) -> HttpResponse:
    post = Post.objects.get(pk=pk)
    post.title = request.GET.get("title", post.title + "!")
    post.save()
    return HttpResponse("ok")


def save_page_then_fail(request: HttpRequest, pk: int) -> HttpResponse:
    page = Page.objects.get(pk=pk)
    page.save()
    raise RuntimeError("the view failed after saving")


def nothing(request: HttpRequest) -> HttpResponse:
    return HttpResponse("nothing changed")


async def async_save_page(request: HttpRequest, pk: int) -> HttpResponse:
    page = await Page.objects.aget(pk=pk)
    await page.asave()
    if BARRIER is not None:
        await BARRIER.wait()
    return HttpResponse(page.path)


def create_story(request: HttpRequest, slug: str) -> HttpResponse:
    Story.objects.create(slug=slug)
    return HttpResponse(slug)


async def async_create_story(request: HttpRequest, slug: str) -> HttpResponse:
    """Saves, then adds a URL by hand, in the event loop (where the ORM refuses to run)."""
    await Story.objects.acreate(slug=slug)
    submit(f"/stories/{slug}/amp/")
    return HttpResponse(slug)
