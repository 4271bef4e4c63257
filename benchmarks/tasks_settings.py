"""Django settings for ``bench_tasks.py``: one site, delivered through rq or django-tasks-db.

``BENCH_DB`` is the SQLite file (shared by the benchmark and its workers),
``BENCH_REDIS`` the Redis URL (rq's queue and the Redis cache), ``BENCH_ENGINE_URL``
the loopback engine. ``BENCH_DEBOUNCE`` names the debounce cache of this process:
``redis`` (Django's ``RedisCache``), ``database`` (Django's ``DatabaseCache``,
the set-up of a site without Redis) or ``locmem`` (the worker's own memory).
"""

from __future__ import annotations

import importlib.util
import os

SECRET_KEY = "indexnow-django-benchmark"
USE_TZ = True
_TASKS = "django.tasks" if importlib.util.find_spec("django.tasks") else "django_tasks"
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django_rq",
    *(["django_tasks"] if _TASKS == "django_tasks" else []),
    "django_tasks_db",
    "indexnow_django",
]
DATABASES = {
    "default": {
        "ENGINE": "django.db.backends.sqlite3",
        "NAME": os.environ["BENCH_DB"],
        "OPTIONS": {"timeout": 20},
    }
}
_REDIS = os.environ["BENCH_REDIS"]
CACHES = {
    "redis": {"BACKEND": "django.core.cache.backends.redis.RedisCache", "LOCATION": _REDIS},
    "database": {
        "BACKEND": "django.core.cache.backends.db.DatabaseCache",
        "LOCATION": "bench_cache",
    },
    "locmem": {"BACKEND": "django.core.cache.backends.locmem.LocMemCache"},
}
CACHES["default"] = CACHES[os.environ.get("BENCH_DEBOUNCE", "redis")]
RQ_QUEUES = {"default": {"URL": _REDIS}}
RQ = {"WORKER_CLASS": "indexnow_django.worker.Worker"}
TASKS = {"default": {"BACKEND": "django_tasks_db.DatabaseBackend"}}

INDEXNOW = {
    "KEY": "bench-key-0123456789",
    "BASE_URL": "https://www.example.com",
    "ENGINES": [os.environ["BENCH_ENGINE_URL"]],
    "DISPATCH": os.environ.get("BENCH_DISPATCH", "queue"),
    "DEBOUNCE": {"CACHE": "default", "TTL": 600},
    # The throttle spaces POSTs alike for every transport: measured on its own elsewhere.
    "THROTTLE": {"MAX_REQUESTS_PER_MINUTE": None},
    # Finished jobs are kept, so that the benchmark reads their start and end.
    "QUEUE": {"RESULT_TTL": 600},
    "HTTP": {"TIMEOUT": 30},
    # The delivery history is a database write per POST, measured elsewhere.
    "HISTORY": {"ENABLED": False},
}
LOGGING = {"version": 1, "disable_existing_loggers": False}
