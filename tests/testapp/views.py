from __future__ import annotations

from django.http import HttpRequest, HttpResponse

from tests.testapp.models import Post


def save_post(request: HttpRequest, pk: int) -> HttpResponse:
    post = Post.objects.get(pk=pk)
    post.title = request.GET.get("title", post.title + "!")
    post.save()
    return HttpResponse("ok")
