"""Pages of posts that say in different ways whether they are worth indexing (the
preflight's tests and its benchmark): ``post_page`` renders the post of a slug."""

from __future__ import annotations

import functools
from collections import Counter
from typing import Any

from django.http import Http404, HttpRequest, HttpResponse, HttpResponsePermanentRedirect
from django.template import engines

from tests.testapp.models import Post

#: Paths rendered in this process, and how often.
RENDERED: Counter[str] = Counter()

PAGE = """<!doctype html>
<html lang="en">
<head>
  <meta charset="utf-8">
  <title>{{ post.title }}</title>
  {% if robots %}<meta name="robots" content="{{ robots }}">{% endif %}
  <link rel="canonical" href="{{ canonical }}">
  <link rel="stylesheet" href="/static/site.css">
</head>
<body>
  <header><nav><a href="/">Home</a> <a href="/posts/">Posts</a></nav></header>
  <article>
    <h1>{{ post.title }}</h1>
    {% if post.category %}<p>In {{ post.category.name }}</p>{% endif %}
    <div>{{ post.body|linebreaks }}</div>
    <ul>{% for tag in post.tags.all %}<li>{{ tag.name }}</li>{% endfor %}</ul>
  </article>
  <footer>{% for other in recent %}<a href="{{ other.get_absolute_url }}">{{ other.title }}</a> {% endfor %}</footer>
</body>
</html>"""


@functools.cache
def _template() -> Any:
    """The page's template, compiled once (as the cached template loader keeps it)."""
    return engines["django"].from_string(PAGE)


def post_page(request: HttpRequest, slug: str) -> HttpResponse:
    """A post's page, as a blog renders it: the post, its tags, the recent posts. Its slug
    says what else the page does: ``noindex-meta``, ``noindex-header``, ``canonical-...``
    (names another page), ``broken`` (raises), ``moved`` (a 301)."""
    RENDERED[request.path] += 1
    post = Post.objects.select_related("category").filter(slug=slug).first()
    if post is None or post.status != Post.PUBLISHED:
        raise Http404("no such post")
    if slug == "broken":
        raise RuntimeError("the template of this post is broken")
    if slug == "moved":
        return HttpResponsePermanentRedirect("/posts/elsewhere/")
    canonical = request.build_absolute_uri()
    if slug.startswith("canonical"):
        canonical = request.build_absolute_uri("/posts/the-original/")
    context = {
        "post": post,
        "robots": "noindex, follow" if slug == "noindex-meta" else "",
        "canonical": canonical,
        "recent": Post.objects.filter(status=Post.PUBLISHED).order_by("-pk")[:5],
    }
    response = HttpResponse(_template().render(context, request))
    if slug == "noindex-header":
        response["X-Robots-Tag"] = "noindex"
    return response
