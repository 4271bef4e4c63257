"""Django settings for ``bench_coalesce.py``: queue dispatch to the benchmark's Redis and engine.

``BENCH_REDIS_URL`` is the Redis server (database 0 for the queue, 1 for the
debounce cache), ``BENCH_ENGINE_URL`` the loopback engine's endpoint and
``BENCH_COALESCE`` the value of ``QUEUE["COALESCE"]``.
"""

from __future__ import annotations

import os

SECRET_KEY = "indexnow-django-benchmark"
USE_TZ = True
INSTALLED_APPS = ["django.contrib.contenttypes", "django_rq", "indexnow_django"]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}

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
    "DISPATCH": "queue",
    "QUEUE": {"COALESCE": float(os.environ.get("BENCH_COALESCE", "0"))},
    "HTTP": {"TIMEOUT": 30},
    # What is measured is the delivery itself: the throttle's default (60 POSTs a minute)
    # would spread today's one POST per flush over an hour and a half.
    "THROTTLE": {"MAX_REQUESTS_PER_MINUTE": None},
    # The delivery history is a database write per POST, measured elsewhere.
    "HISTORY": {"ENABLED": False},
}
LOGGING = {"version": 1, "disable_existing_loggers": False, "root": {"level": "WARNING"}}
