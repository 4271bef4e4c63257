from modeltranslation.translator import TranslationOptions, register

from .models import Guide, Story


@register(Story)
class StoryTranslationOptions(TranslationOptions):
    fields = ("title", "slug", "body")


@register(Guide)
class GuideTranslationOptions(TranslationOptions):
    fields = ("title", "slug")
