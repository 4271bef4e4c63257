"""Settings of a small project whose own tests run under Django's test runner.

Its queue and engine are the ones the caller gives (``RUNNER_REDIS_URL``,
``RUNNER_ENGINE_URL``), so that the caller can see that the run left nothing
in them.
"""

from __future__ import annotations

import os

SECRET_KEY = "indexnow-django-runner-project"
USE_TZ = True
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "tests.testapp.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
SITE_ID = 1

INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sites",
    "django_rq",
    "indexnow_django",
    "tests.testapp",
]
MIDDLEWARE = ["indexnow_django.middleware.IndexNowMiddleware"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": os.environ["RUNNER_DB"]}}
RQ_QUEUES = {"default": {"URL": os.environ["RUNNER_REDIS_URL"]}}
INDEXNOW = {
    "KEY": "runner-key-0123456789",
    "BASE_URL": "https://www.example.com",
    "ENGINES": [os.environ["RUNNER_ENGINE_URL"]],
    "DISPATCH": "queue",
}
