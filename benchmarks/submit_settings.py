"""Django settings for ``bench_submit.py``: a site whose engine is the benchmark's loopback engine.

``BENCH_ENGINE_URL`` is the engine's endpoint; ``BENCH_DEBOUNCE`` is ``off``
(TTL 0), ``locmem`` or a ``redis://`` URL for the debounce cache (Django's
``RedisCache``).
"""

from __future__ import annotations

import os

SECRET_KEY = "indexnow-django-benchmark"
USE_TZ = True
INSTALLED_APPS = ["django.contrib.contenttypes", "indexnow_django"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}

_debounce = os.environ.get("BENCH_DEBOUNCE", "off")
CACHES = {"default": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"}}
if _debounce.startswith("redis://"):
    CACHES["default"] = {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": _debounce,
    }

INDEXNOW = {
    "KEY": "bench-key-0123456789",
    "BASE_URL": "https://www.example.com",
    "ENGINES": [os.environ["BENCH_ENGINE_URL"]],
    "DISPATCH": "sync",
    "DEBOUNCE": {"CACHE": "default", "TTL": 0 if _debounce == "off" else 600},
    "HTTP": {"TIMEOUT": 30},
    # The delivery history is a database write per POST, measured elsewhere.
    "HISTORY": {"ENABLED": False},
    # What is measured is the sending: the throttle would space the 100 POSTs a second apart.
    "THROTTLE": {"MAX_REQUESTS_PER_MINUTE": None},
}
