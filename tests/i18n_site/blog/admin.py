from django.contrib import admin
from modeltranslation.admin import TranslationAdmin
from parler.admin import TranslatableAdmin

from indexnow_django.admin import IndexNowAdminMixin

from .models import Article, Story


@admin.register(Story)
class StoryAdmin(IndexNowAdminMixin, TranslationAdmin):
    list_display = ["title", "status"]


@admin.register(Article)
class ArticleAdmin(IndexNowAdminMixin, TranslatableAdmin):
    list_display = ["status"]
