"""MkDocs hook: pages that show a file from the top of the repository.

The changelog page shows CHANGELOG.md, the contributing page CONTRIBUTING.md.
Plain MkDocs cannot include a file from outside ``docs/``; this hook replaces
such a page's Markdown with the file's when the page is built, so the file
stays the single source.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[2]
SHOWN = {"changelog.md": ROOT / "CHANGELOG.md", "contributing.md": ROOT / "CONTRIBUTING.md"}


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    source = SHOWN.get(page.file.src_uri)
    if source is None or not source.exists():
        return markdown
    return source.read_text(encoding="utf-8")
