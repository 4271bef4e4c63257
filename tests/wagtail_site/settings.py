"""Settings of the Wagtail test site: the suite's settings plus Wagtail and its admin."""

from __future__ import annotations

from tests.settings import *  # noqa: F403
from tests.settings import INDEXNOW, INSTALLED_APPS, MIDDLEWARE

# Wagtail's apps (and what its admin needs) over the suite's, each once, in this order.
_WAGTAIL_APPS = [
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
INSTALLED_APPS = [
    *[app for app in INSTALLED_APPS if app != "tests.testapp"],
    *[app for app in _WAGTAIL_APPS if app not in INSTALLED_APPS],
]

_ADMIN_MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
MIDDLEWARE = [*[m for m in _ADMIN_MIDDLEWARE if m not in MIDDLEWARE], *MIDDLEWARE]

ROOT_URLCONF = "tests.wagtail_site.urls"
WAGTAIL_SITE_NAME = "IndexNow test site"
WAGTAILADMIN_BASE_URL = "https://www.example.com"
WAGTAILADMIN_COMMENTS_ENABLED = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


# Publishing the same page twice in a test is sent twice.
INDEXNOW = {**INDEXNOW, "DEBOUNCE": {"TTL": 0}}
