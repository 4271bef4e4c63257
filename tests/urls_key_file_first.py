"""A URLconf with the key file's include first, as the Wagtail and django CMS pages show
it, and the site's own ``*.txt`` files after it."""

from django.http import HttpRequest, HttpResponse
from django.urls import include, path


def text_file(request: HttpRequest, **kwargs: str) -> HttpResponse:
    return HttpResponse(f"the site's own {request.path}", content_type="text/plain")


urlpatterns = [
    path("", include("indexnow_django.urls")),
    path("robots.txt", text_file, name="robots"),
    path("ads.txt", text_file),
    path("llms.txt", text_file),
    path("llms-full.txt", text_file),
    path("<slug:name>.txt", text_file),
]
