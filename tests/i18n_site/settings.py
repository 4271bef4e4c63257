"""Settings of the multilingual test site: the suite's settings with three languages,
``LocaleMiddleware``, URLs in ``i18n_patterns``, django-modeltranslation (before the
admin, as it asks) and django-parler."""

from __future__ import annotations

from tests.needs import AT_ONCE
from tests.settings import *  # noqa: F403
from tests.settings import INDEXNOW, INSTALLED_APPS, MIDDLEWARE, SITE_ID

INSTALLED_APPS = [
    "modeltranslation",
    *[app for app in INSTALLED_APPS if app not in ("tests.testapp", "tests.thirdparty", "parler")],
    "parler",
    "tests.i18n_site.blog",
]
_SESSIONS = "django.contrib.sessions.middleware.SessionMiddleware"
MIDDLEWARE = [
    *MIDDLEWARE[: MIDDLEWARE.index(_SESSIONS) + 1],
    "django.middleware.locale.LocaleMiddleware",
    *MIDDLEWARE[MIDDLEWARE.index(_SESSIONS) + 1 :],
]

ROOT_URLCONF = "tests.i18n_site.urls"
USE_I18N = True
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("fr", "French"), ("de", "German")]
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# A translation left empty is empty (no fallback to English): a story is public in a
# language once its title there is written.
MODELTRANSLATION_ENABLE_FALLBACKS = False
PARLER_LANGUAGES = {
    SITE_ID: ({"code": "en"}, {"code": "fr"}, {"code": "de"}),
    "default": {"fallbacks": ["en"], "hide_untranslated": False},
}

# French guides are served by fr.example.com, which has a key of its own.
# The site's tests look at the POSTs a change makes: sent at once, in process (AT_ONCE).
INDEXNOW = {
    **INDEXNOW,
    **AT_ONCE,
    "DEBOUNCE": {"TTL": 0},  # the same URL twice in a test is sent twice
    "HOSTS": {
        "www.example.com": {"KEY": "test-key-0123456789"},
        "fr.example.com": {"KEY": "french-key-9876543210"},
    },
}
