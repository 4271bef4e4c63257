"""A URLconf that needs no installed app."""

from django.http import HttpRequest, HttpResponse
from django.urls import path


def ping(request: HttpRequest) -> HttpResponse:
    return HttpResponse("pong")


urlpatterns = [path("ping/", ping)]
