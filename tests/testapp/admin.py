from __future__ import annotations

from django.contrib import admin

from indexnow_django.admin import IndexNowAdminMixin
from tests.testapp.models import Post


@admin.register(Post)
class PostAdmin(IndexNowAdminMixin, admin.ModelAdmin):
    list_display = ["title", "status"]
