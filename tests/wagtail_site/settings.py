"""Settings of the Wagtail test site: the suite's settings plus Wagtail and its admin."""

from __future__ import annotations

from tests.settings import *  # noqa: F403
from tests.settings import INDEXNOW, INSTALLED_APPS, MIDDLEWARE

INSTALLED_APPS = [
    *[app for app in INSTALLED_APPS if app not in ("tests.testapp",)],
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "taggit",
    "modelcluster",
    "wagtail.users",
    "wagtail.admin",
    "wagtail",
    "indexnow_django.contrib.wagtail",
    "tests.wagtail_site.pages",
]

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    *MIDDLEWARE,
]

ROOT_URLCONF = "tests.wagtail_site.urls"
STATIC_URL = "/static/"
WAGTAIL_SITE_NAME = "IndexNow test site"
WAGTAILADMIN_BASE_URL = "https://www.example.com"
WAGTAILADMIN_COMMENTS_ENABLED = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ]
        },
    }
]

# Publishing the same page twice in a test is sent twice.
INDEXNOW = {**INDEXNOW, "DEBOUNCE": {"TTL": 0}}
