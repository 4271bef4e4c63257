"""Django settings for ``bench_defaults.py``: a site as the quickstart makes it.

``INDEXNOW`` names the key, the base URL and the engine and nothing else, so that
what is measured is the shipped defaults (the coalescing window, the throttle, the
history). ``BENCH_BEFORE=1`` sets ``QUEUE["COALESCE"]`` to 0, the previous default
(a job per flush). ``BENCH_REDIS_URL`` is the Redis server (database 0 for the
queue, 1 for the cache), ``BENCH_ENGINE_URL`` the loopback engine's endpoint and
``BENCH_DB`` the SQLite file (migrated by the benchmark).
"""

from __future__ import annotations

import os

SECRET_KEY = "indexnow-django-benchmark"
USE_TZ = True
INSTALLED_APPS = ["django.contrib.contenttypes", "django_rq", "indexnow_django"]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ["BENCH_DB"],
        "OPTIONS": {"timeout": 30},
    }
}

_redis = os.environ["BENCH_REDIS_URL"].rstrip("/")
CACHES = {
    "default": {
        "BACKEND": "django.core.cache.backends.redis.RedisCache",
        "LOCATION": f"{_redis}/1",
    }
}
RQ_QUEUES = {"default": {"URL": f"{_redis}/0"}}
RQ = {"WORKER_CLASS": "indexnow_django.worker.Worker"}

INDEXNOW = {
    "KEY": "bench-key-0123456789",
    "BASE_URL": "https://www.example.com",
    "ENGINES": [os.environ["BENCH_ENGINE_URL"]],
}
if os.environ.get("BENCH_BEFORE") == "1":
    INDEXNOW["QUEUE"] = {"COALESCE": 0}
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "WARNING"}}
