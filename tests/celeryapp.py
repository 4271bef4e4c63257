"""The suite's Celery app, as a site defines its own (``proj/celery.py``): a worker is
``celery -A tests.celeryapp worker``; its settings are the ``CELERY_*`` of tests.settings."""

from __future__ import annotations

import os

from celery import Celery

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.settings")

app = Celery("tests")
app.config_from_object("django.conf:settings", namespace="CELERY")
app.autodiscover_tasks()
