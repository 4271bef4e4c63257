"""Settings for mypy's Django plugin: the app wiring only, no services started."""

SECRET_KEY = "typecheck"
INSTALLED_APPS = [
    "django.contrib.contenttypes",
    "django.contrib.auth",
    "django_rq",
    "indexnow_django",
]
DATABASES = {"default": {"ENGINE": "django.db.backends.sqlite3", "NAME": ":memory:"}}
USE_TZ = True
