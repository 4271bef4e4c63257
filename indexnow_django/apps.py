"""The app's configuration: what happens when Django starts (checks, signals, discovery)."""

from __future__ import annotations

from django.apps import AppConfig
from django.core.signals import setting_changed


class IndexNowConfig(AppConfig):
    name = "indexnow_django"
    label = "indexnow"
    verbose_name = "IndexNow"

    def ready(self) -> None:
        from . import checks, conf, tracking
        from .registration import languages, registry
        from .units import collector, commands

        checks.register_checks()
        setting_changed.connect(conf.clear_cache, dispatch_uid="indexnow_django.conf.clear_cache")
        setting_changed.connect(
            languages.clear_cache, dispatch_uid="indexnow_django.registration.languages.clear_cache"
        )
        registry.autodiscover()
        tracking.connect()
        commands.install_command_units(conf.command_units_enabled())
        collector.connect_tasks()
        collector.connect_celery()
        from . import tasks
        from .transports.tasks import build_at_start

        build_at_start(tasks.FUNCTIONS)
