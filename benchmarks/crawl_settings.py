"""Django settings for ``bench_crawl.py``: the app's middleware in front of one small view.

``BENCH_DB`` is a SQLite file path or ``postgres://HOST:PORT/NAME`` (user ``postgres``);
``BENCH_REDIS_URL`` the Redis of the queue (where crawlers' fetches are kept).
"""

from __future__ import annotations

import os

from django.http import HttpRequest, HttpResponse
from django.urls import path

SECRET_KEY = "indexnow-django-benchmark"
USE_TZ = True
DEBUG = False
ALLOWED_HOSTS = ["www.example.com"]
ROOT_URLCONF = "crawl_settings"
INSTALLED_APPS = ["django.contrib.contenttypes", "django_rq", "indexnow_django"]
MIDDLEWARE = ["indexnow_django.middleware.IndexNowMiddleware"]

# The database of BENCH_DB, as the history benchmarks read it.
from history_settings import CACHES, DATABASES  # noqa: E402, F401

RQ_QUEUES = {"default": {"URL": os.environ.get("BENCH_REDIS_URL", "redis://127.0.0.1:6379/0")}}

INDEXNOW = {
    "KEY": "bench-key-0123456789",
    "BASE_URL": "https://www.example.com",
    "ENGINES": ["indexnow", "bing"],
    "DISPATCH": "queue",
    "CRAWL": {"ENABLED": os.environ.get("BENCH_CRAWL", "on") == "on"},
}


def page(request: HttpRequest) -> HttpResponse:
    return HttpResponse("<html><body>A page.</body></html>")


urlpatterns = [path("blog/<slug:slug>/", page)]
