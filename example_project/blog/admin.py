from __future__ import annotations

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.http import HttpRequest

from indexnow_django.admin import IndexNowAdminMixin

from .models import Category, Page, Post


@admin.register(Category)
class CategoryAdmin(admin.ModelAdmin):
    list_display = ["name", "slug"]
    prepopulated_fields = {"slug": ["name"]}


# The mixin shows on each post's page when the engines last accepted its URLs,
# and a "Submit now" button.
@admin.register(Post)
class PostAdmin(IndexNowAdminMixin, admin.ModelAdmin):
    list_display = ["title", "category", "status", "published_at", "updated_at"]
    list_filter = ["status", "category"]
    search_fields = ["title", "body"]
    prepopulated_fields = {"slug": ["title"]}
    date_hierarchy = "published_at"
    actions = ["publish", "unpublish"]

    # Bulk actions save each object instead of calling QuerySet.update(), which
    # sends no signals: saving is what tells IndexNow that the pages changed.
    # All the posts of one action are submitted together, in one request.
    @admin.action(description="Publish selected posts")
    def publish(self, request: HttpRequest, queryset: QuerySet[Post]) -> None:
        count = 0
        for post in queryset.exclude(status=Post.Status.PUBLISHED):
            post.status = Post.Status.PUBLISHED
            post.save()
            count += 1
        self.message_user(request, f"{count} post(s) published.", messages.SUCCESS)

    @admin.action(description="Unpublish selected posts")
    def unpublish(self, request: HttpRequest, queryset: QuerySet[Post]) -> None:
        count = 0
        for post in queryset.filter(status=Post.Status.PUBLISHED):
            post.status = Post.Status.DRAFT
            post.save()
            count += 1
        self.message_user(request, f"{count} post(s) unpublished.", messages.SUCCESS)


@admin.register(Page)
class PageAdmin(admin.ModelAdmin):
    list_display = ["title", "slug"]
    prepopulated_fields = {"slug": ["title"]}
