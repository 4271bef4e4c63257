"""A URLconf that forgot ``include("indexnow_django.urls")``."""

from django.contrib import admin
from django.urls import path

urlpatterns = [path("admin/", admin.site.urls)]
