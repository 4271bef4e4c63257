from django.apps import AppConfig


class BlogConfig(AppConfig):
    name = "tests.i18n_site.blog"
    label = "i18n_blog"
    default_auto_field = "django.db.models.BigAutoField"
