from django.http import HttpRequest, HttpResponse


def page(request: HttpRequest, slug: str) -> HttpResponse:
    return HttpResponse(slug)
