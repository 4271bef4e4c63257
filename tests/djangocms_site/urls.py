from django.conf.urls.i18n import i18n_patterns
from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("indexnow_django.urls")),
    *i18n_patterns(path("", include("cms.urls")), prefix_default_language=False),
]
