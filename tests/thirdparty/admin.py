from typing import Any

from django.contrib import admin
from parler.admin import TranslatableAdmin
from polymorphic.admin import PolymorphicChildModelAdmin, PolymorphicParentModelAdmin
from reversion.admin import VersionAdmin
from treebeard.admin import TreeAdmin
from treebeard.forms import movenodeform_factory

import indexnow_django
from tests.thirdparty.models import Book, Guide, Lesson, Note, Product, Section, Step, Story

admin.site.register(Note)
admin.site.register(Guide, TranslatableAdmin)


class StepInline(admin.TabularInline):
    model = Step
    extra = 1


@admin.register(Lesson)
class LessonAdmin(admin.ModelAdmin):
    inlines = [StepInline]


@admin.register(Section)
class SectionAdmin(TreeAdmin):
    """treebeard's admin moves nodes in its form, with no signal: watched."""

    form = movenodeform_factory(Section)

    def save_form(self, request: Any, form: Any, change: bool) -> Any:
        if not change:
            return super().save_form(request, form, change)
        node = Section.objects.get(pk=form.instance.pk)
        with indexnow_django.watch([node, *node.get_descendants()]):
            return super().save_form(request, form, change)


@admin.register(Story)
class StoryAdmin(VersionAdmin):
    """django-reversion's admin: history, revert and recover."""


@admin.register(Book)
class BookAdmin(PolymorphicChildModelAdmin):
    base_model = Product


@admin.register(Product)
class ProductAdmin(PolymorphicParentModelAdmin):
    base_model = Product
    child_models = (Book,)
