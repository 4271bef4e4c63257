from django.apps import AppConfig


class PagesConfig(AppConfig):
    name = "tests.wagtail_site.pages"
    label = "wagtail_site_pages"
    default_auto_field = "django.db.models.BigAutoField"
