from django.conf.urls.i18n import i18n_patterns
from django.contrib import admin
from django.urls import include, path

from tests.i18n_site.blog import views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("indexnow_django.urls")),
    *i18n_patterns(
        path("story/<slug:slug>/", views.page, name="story"),
        path("article/<slug:slug>/", views.page, name="article"),
        prefix_default_language=True,
    ),
    # Guides are served on a host per language (fr.example.com), without a prefix.
    path("guide/<slug:slug>/", views.page, name="guide"),
]
