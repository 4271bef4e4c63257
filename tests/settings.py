"""Settings of the test suite. Worker processes started by tests import them too.

The addresses of Redis, the loopback engine and the database come from the
environment, where the test session (``tests/plugin.py``) put them when it
started the services; importing these settings starts nothing.

The database is SQLite, or PostgreSQL on 127.0.0.1:5432 (user postgres, trust
auth) with ``INDEXNOW_TEST_DATABASE=postgres``.

``INDEXNOW_TEST_OVERRIDES`` (JSON) is merged over ``INDEXNOW`` so that a test
can start a worker with the settings it needs (short retry delays, say).
"""

from __future__ import annotations

import importlib.util
import json
import os

from tests.services import POSTGRES, address

SECRET_KEY = "indexnow-django-tests"
DEBUG = False
USE_TZ = True
TIME_ZONE = "Europe/Paris"
ALLOWED_HOSTS = ["*"]
ROOT_URLCONF = "tests.urls"
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"
SITE_ID = 1

REDIS_URL = address("REDIS_URL").rstrip("/")
ENGINE_URL = address("INDEXNOW_TEST_ENGINE_URL")
_DATABASE = os.environ.get("INDEXNOW_TEST_DATABASE", "sqlite")
if _DATABASE not in ("sqlite", "postgres"):
    raise RuntimeError(f"INDEXNOW_TEST_DATABASE is 'sqlite' or 'postgres', not {_DATABASE!r}")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django.contrib.sites",
    "django.contrib.sitemaps",
    "django_rq",
    # DISPATCH "tasks": django-tasks-db's backend, models and db_worker.
    "django_tasks_db",
    "indexnow_django",
    "tests.testapp",
    # The apps of docs/third-party.md, and models built on them.
    "taggit",
    "parler",
    "treebeard",
    "mptt",
    "reversion",
    "polymorphic",
    "tests.thirdparty",
]

# django-parler (tests/thirdparty): English and French.
PARLER_DEFAULT_LANGUAGE_CODE = "en"
PARLER_LANGUAGES = {
    SITE_ID: ({"code": "en"}, {"code": "fr"}),
    "default": {"fallbacks": ["en"], "hide_untranslated": False},
}

# Django's tasks framework (6.0+), or the django-tasks backport on Django 5.2.
_TASKS = "django.tasks" if importlib.util.find_spec("django.tasks") else "django_tasks"
if _TASKS == "django_tasks":
    INSTALLED_APPS.insert(INSTALLED_APPS.index("django_tasks_db"), "django_tasks")
TASKS = {
    "default": {"BACKEND": f"{_TASKS}.backends.immediate.ImmediateBackend"},
    "database": {"BACKEND": "django_tasks_db.DatabaseBackend"},
    "rq": {"BACKEND": "django_tasks_rq.RQBackend", "QUEUES": ["default"]},
}

# Celery (tests/test_tasks_celery.py): the backend "celery" is django-tasks-celery on Django
# 6, django-tasks-fennel on Django 5.2 (or where django-tasks-celery is not installed); the
# app is the suite's (tests/celeryapp.py), a worker is ``celery -A tests.celeryapp worker``.
CELERY_BROKER_URL = f"{address('REDIS_URL').rstrip('/')}/3"
CELERY_RESULT_BACKEND = f"{address('REDIS_URL').rstrip('/')}/4"
CELERY_RESULT_EXTENDED = True
CELERY_BACKEND = None
if _TASKS == "django.tasks" and importlib.util.find_spec("django_tasks_celery"):
    CELERY_BACKEND = "django-tasks-celery"
    TASKS["celery"] = {
        "BACKEND": "django_tasks_celery.CeleryBackend",
        "OPTIONS": {"CELERY_APP": "tests.celeryapp.app"},
    }
elif importlib.util.find_spec("django_tasks_fennel"):
    CELERY_BACKEND = "django-tasks-fennel"
    INSTALLED_APPS.append("django_tasks_fennel")
    TASKS["celery"] = {"BACKEND": "django_tasks_fennel.CeleryBackend"}

MIDDLEWARE = [
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "indexnow_django.middleware.IndexNowMiddleware",
]

# The admin (the history pages and the browser test).
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
STATIC_URL = "/static/"

if _DATABASE == "postgres":
    _PG_NAME = address("INDEXNOW_TEST_PG_NAME")
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            **POSTGRES,
            "NAME": _PG_NAME,
            # The workers started by the tests use the same database.
            "TEST": {"NAME": _PG_NAME},
        },
        # A second alias (tests that save on another database ask for it).
        "other": {
            "ENGINE": "django.db.backends.postgresql",
            **POSTGRES,
            "NAME": f"{_PG_NAME}_other",
            "TEST": {"NAME": f"{_PG_NAME}_other"},
        },
    }
else:
    _DB = address("INDEXNOW_TEST_DB")
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": _DB,
            "TEST": {"NAME": _DB},
            "OPTIONS": {"timeout": 20},
        },
        "other": {
            "ENGINE": "django.db.backends.sqlite3",
            "NAME": f"{_DB}.other",
            "TEST": {"NAME": f"{_DB}.other"},
            "OPTIONS": {"timeout": 20},
        },
    }

CACHES = {
    "default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
    # A cache the pytest process and its workers share.
    "shared": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": f"{REDIS_URL}/1",
    },
}

RQ_QUEUES = {
    "default": {"URL": f"{REDIS_URL}/0", "DEFAULT_TIMEOUT": 60},
}

RQ = {
    "WORKER_CLASS": "indexnow_django.worker.Worker",
}

INDEXNOW = {
    "KEY": "test-key-0123456789",
    "BASE_URL": "https://www.example.com",
    "ENGINES": [ENGINE_URL],
    "HTTP": {"TIMEOUT": 3},
}
INDEXNOW.update(json.loads(os.environ.get("INDEXNOW_TEST_OVERRIDES", "{}")))

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "handlers": {"console": {"class": "logging.StreamHandler"}},
    "loggers": {"indexnow_django": {"handlers": ["console"], "level": "INFO"}},
}

# The processes of a test whose Redis or middleware differ (a worker on a Sentinel's
# master, servers on a Redis the test freezes): top-level settings as JSON, a dict
# merged over the one above, anything else in its place.
for _name, _value in json.loads(os.environ.get("INDEXNOW_TEST_SETTINGS", "{}")).items():
    _current = globals().get(_name)
    globals()[_name] = {**_current, **_value} if isinstance(_current, dict) else _value
