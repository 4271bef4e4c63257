"""The project's own tests, written as docs/testing.md shows, run by ``manage.py test``."""

from __future__ import annotations

from django.test import TestCase

from indexnow_django.testing import capture_submissions
from tests.testapp.models import Page, Post


class PublishTests(TestCase):
    def test_a_request_is_captured(self) -> None:
        post = Post.objects.create(title="Hello", slug="hello", status=Post.PUBLISHED)
        with capture_submissions() as outbox, self.captureOnCommitCallbacks(execute=True):
            self.client.get(f"/posts/{post.pk}/save/", {"title": "Hello again"})
        self.assertEqual(outbox.paths, ["/posts/hello/"])

    def test_a_save_is_captured(self) -> None:
        with capture_submissions() as outbox, self.captureOnCommitCallbacks(execute=True):
            Page.objects.create(path="/about/")
            Page.objects.create(path="/contact/")
        self.assertEqual(outbox.paths, ["/about/", "/contact/"])

    def test_nothing_is_captured_without_a_commit(self) -> None:
        with capture_submissions() as outbox:
            Page.objects.create(path="/never-committed/")
        self.assertEqual(outbox.urls, [])
