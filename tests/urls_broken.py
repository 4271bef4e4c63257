"""A URLconf with a view that fails while it holds the settings: Django's debug page shows
its local variables."""

from django.http import HttpRequest, HttpResponse
from django.urls import include, path

from indexnow_django.conf import get_settings


def broken(request: HttpRequest) -> HttpResponse:
    conf = get_settings()
    shop = conf.host_config("shop.example.com")
    raise RuntimeError(f"broken while holding {conf!r} and {shop!r}")


urlpatterns = [
    path("", include("indexnow_django.urls")),
    path("broken/", broken),
]
