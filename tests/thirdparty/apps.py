from django.apps import AppConfig


class ThirdPartyConfig(AppConfig):
    name = "tests.thirdparty"
    label = "thirdparty"
    default_auto_field = "django.db.models.BigAutoField"
