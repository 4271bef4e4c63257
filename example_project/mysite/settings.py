"""Settings of the example blog.

Everything that differs between a laptop, the demo and a deployment is read
from the environment:

``REDIS_URL``
    The Redis of the queue (default ``redis://127.0.0.1:6379/0``). The cache,
    which also holds the IndexNow debounce store, uses the next database of
    the same Redis, so the web process and the workers share it.
``INDEXNOW_KEY``, ``INDEXNOW_BASE_URL``
    The IndexNow key and the public address of the site.
``INDEXNOW_ENGINES``
    Comma-separated engine names or endpoint URLs (default ``indexnow``).
``INDEXNOW_DRY_RUN``
    ``1`` (the default here, so that running the example never reaches a real
    engine by accident) logs the requests instead of sending them; set ``0``
    to send.
``INDEXNOW_ALLOW_PRIVATE_HOSTS``
    ``1`` sends the URLs of a site on 127.0.0.1 all the same (the demo's stand-in
    engine runs there too); by default they are never sent to an engine.
``INDEXNOW_DISPATCH``, ``INDEXNOW_QUEUE``
    Dispatch mode (default ``auto``) and the rq queue name (default ``default``).
``INDEXNOW_RETRY_BASE_DELAY``, ``INDEXNOW_RETRY_SERVER_ERROR_DELAY``,
``INDEXNOW_RETRY_MAX_ATTEMPTS``, ``INDEXNOW_DEBOUNCE_TTL``
    Retry and debounce figures (defaults: the library's own).
``DATABASE_PATH``
    The SQLite file (default ``example_project/db.sqlite3``).
"""

from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlsplit, urlunsplit

BASE_DIR = Path(__file__).resolve().parent.parent


def env_bool(name: str, default: bool) -> bool:
    value = os.environ.get(name)
    if value is None or not value.strip():
        return default
    return value.strip().lower() in {"1", "true", "yes", "on"}


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name, "")
    items = [item.strip() for item in value.split(",") if item.strip()]
    return items or default


def redis_database(url: str, offset: int) -> str:
    """``url`` pointed at the database ``offset`` after the one it names (default 0)."""
    parts = urlsplit(url)
    current = parts.path.strip("/")
    number = int(current) if current.isdigit() else 0
    return urlunsplit((parts.scheme, parts.netloc, f"/{number + offset}", parts.query, ""))


SECRET_KEY = os.environ.get("DJANGO_SECRET_KEY", "example-project-secret-do-not-use-in-production")
DEBUG = env_bool("DJANGO_DEBUG", True)
ALLOWED_HOSTS = ["127.0.0.1", "localhost", "[::1]", *env_list("DJANGO_ALLOWED_HOSTS", [])]

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "django_rq",
    "indexnow_django",
    "blog",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # One unit of work per request: the URLs a request changes are sent once.
    "indexnow_django.middleware.IndexNowMiddleware",
]

ROOT_URLCONF = "mysite.urls"
WSGI_APPLICATION = "mysite.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ.get("DATABASE_PATH") or BASE_DIR / "db.sqlite3",
        # The web process and the worker write to the same file (the worker
        # records each POST): transactions take the write lock when they begin,
        # so that two writers wait for each other instead of failing.
        "OPTIONS": {
            "timeout": 20,
            "transaction_mode": "IMMEDIATE",
            "init_command": "PRAGMA journal_mode=WAL;",
        },
    }
}

DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

USE_I18N = True
USE_TZ = True
TIME_ZONE = os.environ.get("TIME_ZONE", "UTC")
LANGUAGE_CODE = "en-us"

STATIC_URL = "static/"

# --- Redis: the queue and the cache ----------------------------------------

REDIS_URL = os.environ.get("REDIS_URL") or "redis://127.0.0.1:6379/0"
QUEUE_NAME = os.environ.get("INDEXNOW_QUEUE") or "default"

RQ_QUEUES = {
    QUEUE_NAME: {"URL": redis_database(REDIS_URL, 0), "DEFAULT_TIMEOUT": 60},
}

# The worker gives every job its own unit of work, so that URLs a job's saves
# produce are submitted once when the job ends.
RQ = {"WORKER_CLASS": "indexnow_django.worker.Worker"}

# A cache every process shares: the debounce store must be seen by the web
# process and by every worker, which a per-process LocMemCache is not.
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": redis_database(REDIS_URL, 1),
        "KEY_PREFIX": "example",
    }
}

# --- IndexNow ----------------------------------------------------------------

INDEXNOW = {
    "KEY": os.environ.get("INDEXNOW_KEY") or "example-project-key-0123456789",
    "BASE_URL": os.environ.get("INDEXNOW_BASE_URL") or "http://127.0.0.1:8000",
    "ENGINES": env_list("INDEXNOW_ENGINES", ["indexnow"]),
    "DRY_RUN": env_bool("INDEXNOW_DRY_RUN", True),
    "ALLOW_PRIVATE_HOSTS": env_bool("INDEXNOW_ALLOW_PRIVATE_HOSTS", False),
    "DISPATCH": os.environ.get("INDEXNOW_DISPATCH") or "auto",
    "QUEUE": {"NAME": QUEUE_NAME},
    "RETRY": {
        "BASE_DELAY": float(os.environ.get("INDEXNOW_RETRY_BASE_DELAY") or 60),
        "SERVER_ERROR_DELAY": float(os.environ.get("INDEXNOW_RETRY_SERVER_ERROR_DELAY") or 5),
        "MAX_ATTEMPTS": int(os.environ.get("INDEXNOW_RETRY_MAX_ATTEMPTS") or 3),
    },
    "DEBOUNCE": {"CACHE": "default", "TTL": int(os.environ.get("INDEXNOW_DEBOUNCE_TTL") or 600)},
}

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {"short": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"}},
    "handlers": {"console": {"class": "logging.StreamHandler", "formatter": "short"}},
    "loggers": {"indexnow_django": {"handlers": ["console"], "level": "INFO"}},
}
