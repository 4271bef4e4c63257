"""A URLconf whose catch-all pattern comes before the key file's."""

from django.http import HttpRequest, HttpResponse
from django.urls import include, re_path


def catch_all(request: HttpRequest, path: str) -> HttpResponse:
    return HttpResponse("<!doctype html><title>app</title>")


urlpatterns = [
    re_path(r"^(?P<path>.*)$", catch_all),
    re_path(r"^", include("indexnow_django.urls")),
]
