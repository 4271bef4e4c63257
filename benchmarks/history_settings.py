"""Django settings for ``bench_history.py``.

``BENCH_DB`` is a SQLite file path or ``postgres://HOST:PORT/NAME`` (user
``postgres``, no password); ``BENCH_ENGINE_URL`` the loopback engine;
``BENCH_HISTORY`` ``on`` or ``off``.
"""

from __future__ import annotations

import os
from urllib.parse import urlsplit

SECRET_KEY = "indexnow-django-benchmark"
USE_TZ = True
INSTALLED_APPS = ["django.contrib.contenttypes", "indexnow_django"]

_db = os.environ.get("BENCH_DB", ":memory:")
if _db.startswith("postgres://"):
    _parts = urlsplit(_db)
    DATABASES = {
        "default": {
            "ENGINE": "django.db.backends.postgresql",
            "HOST": _parts.hostname,
            "PORT": _parts.port or 5432,
            "NAME": _parts.path.lstrip("/"),
            "USER": "postgres",
        }
    }
else:
    DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": _db}}

CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}

INDEXNOW = {
    "KEY": "bench-key-0123456789",
    "BASE_URL": "https://www.example.com",
    "ENGINES": [os.environ.get("BENCH_ENGINE_URL", "http://127.0.0.1:9/indexnow")],
    "DISPATCH": "sync",
    "DEBOUNCE": {"CACHE": "default", "TTL": 0},
    "HTTP": {"TIMEOUT": 30},
    "HISTORY": {"ENABLED": os.environ.get("BENCH_HISTORY", "on") == "on"},
}
