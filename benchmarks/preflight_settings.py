"""Django settings for ``bench_preflight.py``: a site with the usual middleware and the
test suite's blog page (:mod:`tests.testapp.pages`), on a SQLite file."""

from __future__ import annotations

import os

SECRET_KEY = "indexnow-django-benchmark"
USE_TZ = True
DEBUG = False
ALLOWED_HOSTS = ["www.example.com"]
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.sites",
    "indexnow_django",
    "tests.testapp",
]
MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    "indexnow_django.middleware.IndexNowMiddleware",
]
TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {"context_processors": ["django.template.context_processors.request"]},
    }
]
ROOT_URLCONF = "preflight_urls"
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("BENCH_DB", "/tmp/indexnow-bench-preflight.sqlite3"),
    }
}
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
INDEXNOW = {
    "KEY": "bench-key-0123456789",
    "BASE_URL": "https://www.example.com",
    "ENGINES": ["http://127.0.0.1:9/indexnow"],
    # Creating the posts submits nothing: the benchmark renders, it does not send.
    "ENABLED": False,
    "PREFLIGHT": {"ENABLED": True},
    "HISTORY": {"ENABLED": False},
}
