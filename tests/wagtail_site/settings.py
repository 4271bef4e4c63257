"""Settings of the Wagtail test site: the suite's settings plus Wagtail and its admin."""

from __future__ import annotations

from tests.needs import AT_ONCE
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
    "wagtail.locales",
    "indexnow_django.contrib.wagtail",
    "tests.wagtail_site.pages",
]
INSTALLED_APPS = [
    *[app for app in INSTALLED_APPS if app != "tests.testapp"],
    *[app for app in _WAGTAIL_APPS if app not in INSTALLED_APPS],
]

_ADMIN_MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
]
MIDDLEWARE = [*[m for m in _ADMIN_MIDDLEWARE if m not in MIDDLEWARE], *MIDDLEWARE]

ROOT_URLCONF = "tests.wagtail_site.urls"

# Two locales: French pages are translations of the English ones, served under /fr/
# (i18n_patterns in the URLconf; English keeps its URLs without a prefix).
USE_I18N = True
LANGUAGE_CODE = "en"
LANGUAGES = WAGTAIL_CONTENT_LANGUAGES = [("en", "English"), ("fr", "French")]
WAGTAIL_I18N_ENABLED = True
WAGTAIL_SITE_NAME = "IndexNow test site"
WAGTAILADMIN_BASE_URL = "https://www.example.com"
WAGTAILADMIN_COMMENTS_ENABLED = False
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]


# Publishing the same page twice in a test is sent twice.
# The site's tests look at the POSTs a change makes: sent at once, in process (AT_ONCE).
INDEXNOW = {**INDEXNOW, **AT_ONCE, "DEBOUNCE": {"TTL": 0}}
