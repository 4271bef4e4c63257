from django.contrib import admin
from parler.admin import TranslatableAdmin

from tests.thirdparty.models import Guide, Lesson, Note, Step

admin.site.register(Note)
admin.site.register(Guide, TranslatableAdmin)


class StepInline(admin.TabularInline):
    model = Step
    extra = 1


@admin.register(Lesson)
class LessonAdmin(admin.ModelAdmin):
    inlines = [StepInline]
