"""Benchmark the preflight: what rendering a URL through the site costs, per URL.

Against a fresh SQLite database, creates ``--posts`` published posts of the test
suite's blog (each with a category and three tags), then renders each post's URL
through :class:`indexnow_django.sending.preflight.Renderer` as the worker does before a
POST (the site's middleware, URLconf, view, template: a page of a post, its tags
and the five newest posts), ``--runs`` times, and prints the time per URL of each
run. Nothing is posted.

Run from the repository root::

    .venv/bin/python benchmarks/bench_preflight.py --posts 500 --runs 5
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "benchmarks"))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--posts", type=int, default=500)
    parser.add_argument("--runs", type=int, default=5)
    parser.add_argument("--db", default="/tmp/indexnow-bench-preflight.sqlite3")
    args = parser.parse_args()
    Path(args.db).unlink(missing_ok=True)
    os.environ["BENCH_DB"] = args.db
    os.environ["DJANGO_SETTINGS_MODULE"] = "preflight_settings"
    import django

    django.setup()
    from django.core.management import call_command

    from indexnow_django.sending.preflight import Renderer
    from tests.testapp.models import Category, Post, Tag

    call_command("migrate", verbosity=0)
    category = Category.objects.create(name="News", slug="news")
    tags = [Tag.objects.create(name=f"tag {n}") for n in range(3)]
    body = "A paragraph of a post, long enough to look like one.\n\n" * 20
    posts = Post.objects.bulk_create(
        Post(title=f"Post {n}", slug=f"post-{n}", body=body, status="published", category=category)
        for n in range(args.posts)
    )
    for post in posts:
        post.tags.set(tags)
    urls = [f"https://www.example.com/posts/{post.slug}/" for post in posts]
    print(
        f"Python {sys.version.split()[0]}, Django {django.get_version()}: "
        f"{len(urls)} URLs, {args.runs} runs"
    )
    renderer = Renderer()
    assert renderer.reason_to_skip(urls[0]) is None
    for run in range(args.runs):
        start = time.perf_counter()
        skipped = [url for url in urls if renderer.reason_to_skip(url) is not None]
        elapsed = time.perf_counter() - start
        assert not skipped, skipped[:3]
        print(f"run {run + 1}: {elapsed / len(urls) * 1000:.2f} ms per URL")
    Path(args.db).unlink(missing_ok=True)


if __name__ == "__main__":
    main()
