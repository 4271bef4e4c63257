from __future__ import annotations

from django.db import transaction
from django.http import HttpRequest, HttpResponse

from tests.testapp.models import Post


class Boom(Exception):
    pass


def rename_twice(request: HttpRequest, pk: int) -> HttpResponse:
    """A rename kept, then one in a savepoint that rolls back (the request's transaction
    commits the first)."""
    post = Post.objects.get(pk=pk)
    post.slug = "x-kept"
    post.save()
    try:
        with transaction.atomic():
            post.slug = "x-ghost"
            post.save()
            raise Boom
    except Boom:
        pass
    return HttpResponse("ok")


def create_event(request: HttpRequest) -> HttpResponse:
    """A form's view: the event saves twice (for its primary key, then its slug)."""
    from tests.thirdparty.models import Event

    event = Event(title=request.POST["title"])
    event.save()
    return HttpResponse(event.slug)
