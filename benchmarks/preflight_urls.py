"""The URLs of ``bench_preflight.py``: the test suite's blog page."""

from __future__ import annotations

from django.urls import path

from tests.testapp.pages import post_page

urlpatterns = [path("posts/<slug:slug>/", post_page)]
