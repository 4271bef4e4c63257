from django.utils.translation import get_language

from indexnow_django import ModelIndexNow, register

from .models import Article, Guide, Story


@register(Story)
class StoryIndexNow(ModelIndexNow):
    fields = ["title", "slug", "body", "status", "published_at"]
    publish_at = "published_at"

    def is_published(self, obj: Story) -> bool:
        # Asked in each language: a translation is public once its title is written.
        return obj.status == "published" and bool(obj.title)


@register(Article)
class ArticleIndexNow(ModelIndexNow):
    fields = ["status", "title", "slug", "body"]  # title, slug and body are translated

    def is_published(self, obj: Article) -> bool:
        # Asked in each language: public where a translation is stored.
        return obj.status == "published" and get_language() in obj.get_available_languages()


#: The host that serves each language's guides.
GUIDE_HOSTS = {"en": "https://www.example.com", "fr": "https://fr.example.com"}


@register(Guide)
class GuideIndexNow(ModelIndexNow):
    languages = ["en", "fr"]  # no German host

    def is_published(self, obj: Guide) -> bool:
        return bool(obj.title)

    def urls(self, obj: Guide) -> list[str]:
        return [GUIDE_HOSTS[get_language()] + obj.get_absolute_url()]
