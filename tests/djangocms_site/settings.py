"""Settings of the django CMS test site: the suite's settings plus django CMS,
djangocms-versioning and their admin; two languages, two sites."""

from __future__ import annotations

from pathlib import Path

from tests.needs import AT_ONCE
from tests.settings import *  # noqa: F403
from tests.settings import INDEXNOW, INSTALLED_APPS, MIDDLEWARE, TEMPLATES

# The suite's apps but its own models and the third-party apps' (django-parler's
# languages are not this site's), then django CMS's, each once, in this order.
_LEFT_OUT = {"tests.testapp", "tests.thirdparty", "parler", "taggit", "mptt"}
_CMS_APPS = [
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.sites",
    "treebeard",
    "sekizai",
    "menus",
    "cms",
    "djangocms_versioning",
    "indexnow_django.contrib.djangocms",
]
INSTALLED_APPS = [
    *[app for app in INSTALLED_APPS if app not in _LEFT_OUT],
    *[app for app in _CMS_APPS if app not in INSTALLED_APPS],
]

_CMS_MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.locale.LocaleMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "cms.middleware.user.CurrentUserMiddleware",
    "cms.middleware.page.CurrentPageMiddleware",
    "cms.middleware.toolbar.ToolbarMiddleware",
    "cms.middleware.language.LanguageCookieMiddleware",
]
MIDDLEWARE = [*[m for m in _CMS_MIDDLEWARE if m not in MIDDLEWARE], *MIDDLEWARE]

TEMPLATES = [
    {
        **TEMPLATES[0],
        "DIRS": [Path(__file__).resolve().parent / "templates"],
        "OPTIONS": {
            "context_processors": [
                *TEMPLATES[0]["OPTIONS"]["context_processors"],
                "django.template.context_processors.i18n",
                "sekizai.context_processors.sekizai",
                "cms.context_processors.cms_settings",
            ]
        },
    }
]

ROOT_URLCONF = "tests.djangocms_site.urls"

# Two languages: German pages are translations of the English ones, served under
# /de/ (i18n_patterns in the URLconf; English keeps its URLs without a prefix).
USE_I18N = True
LANGUAGE_CODE = "en"
LANGUAGES = [("en", "English"), ("de", "German")]
# Two sites (or more), each with its page tree, in both languages (the "default"
# entry); a page's URLs are on its own site's domain.
CMS_LANGUAGES = {
    "default": {
        "public": True,
        "fallbacks": [],
        "redirect_on_fallback": False,
        "hide_untranslated": True,
    }
}
CMS_TEMPLATES = [("page.html", "Page")]
CMS_CONFIRM_VERSION4 = True
X_FRAME_OPTIONS = "SAMEORIGIN"
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]

# Publishing the same page twice in a test is sent twice.
# The site's tests look at the POSTs a change makes: sent at once, in process (AT_ONCE).
INDEXNOW = {**INDEXNOW, **AT_ONCE, "DEBOUNCE": {"TTL": 0}}
