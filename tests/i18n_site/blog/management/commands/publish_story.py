from typing import Any

from django.core.management.base import BaseCommand

from tests.i18n_site.blog.models import Story


class Command(BaseCommand):
    help = "Publish one story (as a site's own command would)."

    def add_arguments(self, parser: Any) -> None:
        parser.add_argument("pk", type=int)

    def handle(self, *args: Any, pk: int, **options: Any) -> None:
        story = Story.objects.get(pk=pk)
        story.status = "published"
        story.save()
        self.stdout.write(f"published {story.title}")
