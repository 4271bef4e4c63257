"""The suite's URLs, and ``/posts/<slug>/``: the pages of the preflight's tests
(:mod:`tests.testapp.pages`)."""

from __future__ import annotations

from django.urls import path

from tests.testapp.pages import RENDERED, post_page
from tests.urls import urlpatterns as suite_urlpatterns

__all__ = ["RENDERED", "urlpatterns"]

urlpatterns = [*suite_urlpatterns, path("posts/<slug:slug>/", post_page, name="post-page")]
