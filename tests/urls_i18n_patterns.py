"""A URLconf whose pages carry the language (``i18n_patterns``)."""

from django.conf.urls.i18n import i18n_patterns
from django.urls import include, path

from tests.testapp import views

urlpatterns = [
    path("", include("indexnow_django.urls")),
    *i18n_patterns(path("posts/<int:pk>/save/", views.save_post, name="save-post")),
]
