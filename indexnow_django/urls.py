"""Include with ``path("", include("indexnow_django.urls"))`` to serve the key file."""

from __future__ import annotations

from django.urls import path

from .views import key_file

app_name = "indexnow"

urlpatterns = [
    path("<str:key>.txt", key_file, name="key-file"),
]
