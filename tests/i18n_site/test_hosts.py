"""A language on its own host: its URLs go to that host, with that host's key."""

from __future__ import annotations

from tests.i18n_site.blog.models import Guide


def test_each_language_goes_to_its_host_with_its_key(engine) -> None:
    Guide.objects.create(
        title_en="Tour", slug_en="tour", title_fr="Visite", slug_fr="visite", title_de="Tour"
    )
    by_host = {post.json["host"]: post.json for post in engine.posts}
    assert sorted(by_host) == ["fr.example.com", "www.example.com"]
    assert by_host["www.example.com"]["key"] == "test-key-0123456789"
    assert by_host["www.example.com"]["urlList"] == ["https://www.example.com/guide/tour/"]
    assert by_host["fr.example.com"]["key"] == "french-key-9876543210"
    assert by_host["fr.example.com"]["urlList"] == ["https://fr.example.com/guide/visite/"]
