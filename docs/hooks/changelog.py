"""MkDocs hook: the changelog page shows CHANGELOG.md from the top of the repository.

Plain MkDocs cannot include a file from outside ``docs/``; this hook replaces the
page's Markdown with the file's when the page is built, so CHANGELOG.md stays
the single source.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

CHANGELOG = Path(__file__).resolve().parents[2] / "CHANGELOG.md"


def on_page_markdown(markdown: str, page: Any, config: Any, files: Any) -> str:
    if page.file.src_uri != "changelog.md":
        return markdown
    if not CHANGELOG.exists():
        return markdown
    return CHANGELOG.read_text(encoding="utf-8")
