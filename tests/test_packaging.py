"""The distributions are complete: the sdist can run its own tests, the wheel links home."""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
import tarfile
import zipfile
from email.parser import Parser
from pathlib import Path

import pytest

from tests import services

ROOT = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="module")
def dists() -> dict[str, Path]:
    """An sdist, and a wheel built from that sdist (as ``python -m build`` does).

    Built once per run, and shared by the xdist workers whose tests need it: two builds
    at once in one source tree would trip on each other's ``egg-info``.
    """
    with services.run_lock("dist") as folder:
        out = folder / "dist"
        if not out.exists():
            building = folder / "dist-building"
            shutil.rmtree(building, ignore_errors=True)  # what a failed build left
            result = subprocess.run(
                [sys.executable, "-m", "build", "--outdir", str(building), str(ROOT)],
                capture_output=True,
                text=True,
                timeout=300,
            )
            assert result.returncode == 0, result.stdout[-3000:] + result.stderr[-3000:]
            building.rename(out)
    (sdist,) = out.glob("*.tar.gz")
    (wheel,) = out.glob("*.whl")
    return {"sdist": sdist, "wheel": wheel}


def source_files(folder: str) -> set[str]:
    return {
        p.relative_to(ROOT).as_posix()
        for p in (ROOT / folder).rglob("*")
        if p.is_file()
        and "__pycache__" not in p.parts
        and p.suffix not in {".pyc", ".sqlite3"}
        and not any(part.startswith(".") for part in p.relative_to(ROOT).parts)
    }


@pytest.mark.slow
def test_the_sdist_holds_the_whole_test_suite_and_the_docs(dists):
    with tarfile.open(dists["sdist"]) as archive:
        names = {name.split("/", 1)[1] for name in archive.getnames() if "/" in name}
    for folder in ("tests", "docs", "indexnow_django"):
        missing = sorted(source_files(folder) - names)
        assert missing == [], f"files of {folder}/ missing from the sdist"
    for name in (
        "pyproject.toml",
        "README.md",
        "CHANGELOG.md",
        "CONTRIBUTING.md",
        "LICENSE",
        "mkdocs.yml",
    ):
        assert name in names


@pytest.mark.slow
def test_the_wheel_names_the_project_urls_and_ships_no_tests(dists):
    with zipfile.ZipFile(dists["wheel"]) as archive:
        (metadata_name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
        names = archive.namelist()
    urls = dict(value.split(", ", 1) for value in metadata.get_all("Project-URL") or [])
    assert {"Homepage", "Documentation", "Changelog", "Source", "Issues"} <= set(urls)
    assert all(url.startswith("https://") for url in urls.values())
    assert not any(name.startswith("tests/") for name in names)
    assert "indexnow_django/py.typed" in names
    assert "indexnow_django/sending/debounce/claim.lua" in names  # read as a resource


@pytest.mark.slow
def test_the_wheel_says_what_the_project_is_for_on_a_package_index(dists):
    with zipfile.ZipFile(dists["wheel"]) as archive:
        (metadata_name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
    classifiers = metadata.get_all("Classifier") or []
    for prefix in (
        "Development Status :: ",
        "Intended Audience :: ",
        "Environment :: ",
        "Topic :: ",
    ):
        assert any(c.startswith(prefix) for c in classifiers), f"no {prefix!r} classifier"
    for version in ("5.2", "6.0", "6.1"):
        assert f"Framework :: Django :: {version}" in classifiers
    keywords = re.split(r"[,\s]+", metadata.get("Keywords") or "")
    assert {"django", "indexnow"} <= set(keywords)


@pytest.mark.slow
def test_a_dependency_has_one_bound_wherever_it_is_named(dists):
    """An extra that names a dependency again allows no other versions than the dependency."""
    with zipfile.ZipFile(dists["wheel"]) as archive:
        (metadata_name,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
        metadata = Parser().parsestr(archive.read(metadata_name).decode())
    bounds: dict[str, dict[str, str]] = {}
    for requirement in metadata.get_all("Requires-Dist") or []:
        spec, _, marker = requirement.partition(";")
        extra = re.search(r"extra == \"(\w+)\"", marker)
        name = re.match(r"[A-Za-z0-9_.-]+", spec).group(0).lower()
        version = spec[len(name) :].strip()
        if version:
            bounds.setdefault(name, {})[extra.group(1) if extra else ""] = version
    assert "redis" in bounds
    for name, where in bounds.items():
        if "" in where:
            others = {extra: v for extra, v in where.items() if v != where[""]}
            assert others == {}, f"{name}: dependencies say {where['']}"


def test_the_readme_links_work_on_a_package_index_page():
    """A package index shows README.md alone: relative links to files would break."""
    readme = (ROOT / "README.md").read_text()
    targets = re.findall(r"\]\(([^)\s]+)\)", readme)
    assert targets, "README.md has no links"
    relative = [t for t in targets if not re.match(r"https?://", t) and not t.startswith("#")]
    assert relative == []
