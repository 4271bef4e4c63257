"""The test session's services: started before pytest-django reads ``tests.settings``.

Loaded with ``-p tests.plugin`` (``addopts`` in ``pyproject.toml``): a plugin
named there is imported before any conftest, and its wrapper of
``pytest_load_initial_conftests`` runs before pytest-django's, which imports
the settings. The settings read the addresses that :func:`tests.services.start`
exports; the services stop when the session ends.
"""

from __future__ import annotations

from collections.abc import Generator

import pytest

from tests import services


@pytest.hookimpl(wrapper=True)
def pytest_load_initial_conftests(
    early_config: pytest.Config, parser: pytest.Parser, args: list[str]
) -> Generator[None]:
    services.start()
    yield


def pytest_unconfigure(config: pytest.Config) -> None:
    services.stop()
