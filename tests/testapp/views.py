from __future__ import annotations

import asyncio

from django.http import HttpRequest, HttpResponse

from tests.testapp.models import Page, Post

#: Set by a test: async views wait on it after saving, so that every request
#: is still running (with its URLs collected) when the first one finishes.
BARRIER: asyncio.Barrier | None = None


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
