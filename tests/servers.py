"""The test project served by a real web server in a process of its own (uvicorn, gunicorn),
on a free port, with the suite's Redis, engine and database: what a site runs in production.
"""

from __future__ import annotations

import contextlib
import json
import os
import subprocess
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from pathlib import Path
from typing import Any

import requests

from tests.services import ROOT, django_env, free_port


class WebServer:
    """A running server: its base URL and what it logged."""

    def __init__(self, base: str, log: Path) -> None:
        self.base = base
        self.log = log

    def output(self) -> str:
        return self.log.read_text(errors="replace")


@contextlib.contextmanager
def serve(
    kind: str,
    log_dir: Path,
    *,
    settings: Mapping[str, Any] | None = None,
    overrides: Mapping[str, Any] | None = None,
    workers: int = 1,
) -> Iterator[WebServer]:
    """``kind`` ``"asgi"`` (uvicorn) or ``"wsgi"`` (gunicorn's sync workers) serving the test
    project with ``tests.testapp.urls``; ``settings``: top-level settings merged over the
    suite's (``INDEXNOW_TEST_SETTINGS``); ``overrides``: ``INDEXNOW`` keys over those the
    test's marks gave. No system checks run, as under any such server."""
    port = free_port()
    command: Sequence[str]
    if kind == "asgi":
        command = [
            *(sys.executable, "-m", "uvicorn"),
            *("--factory", "django.core.asgi:get_asgi_application"),
            *("--host", "127.0.0.1", "--port", str(port), "--workers", str(workers)),
        ]
    else:
        command = [
            *(sys.executable, "-m", "gunicorn", "django.core.wsgi:get_wsgi_application()"),
            *("--bind", f"127.0.0.1:{port}", "--workers", str(workers)),
            *(("--no-control-socket",) if _gunicorn_has_control_socket() else ()),
        ]
    marked = json.loads(os.environ.get("INDEXNOW_TEST_OVERRIDES", "{}"))
    env = django_env(
        INDEXNOW_TEST_SETTINGS=json.dumps(
            {"ROOT_URLCONF": "tests.testapp.urls", **(settings or {})}
        ),
        INDEXNOW_TEST_OVERRIDES=json.dumps({**marked, **(overrides or {})}),
    )
    log = log_dir / f"{kind}-{port}.log"
    base = f"http://127.0.0.1:{port}"
    with log.open("wb") as out:
        process = subprocess.Popen(command, cwd=ROOT, env=env, stdout=out, stderr=subprocess.STDOUT)
    server = WebServer(base, log)
    try:
        # The first request loads the site in the server's worker: on a busy machine that
        # may take a while, so a slow answer is waited for again, as a refused connection is.
        deadline = time.monotonic() + 60
        while True:
            try:
                requests.get(f"{base}/nothing/", timeout=10)
                break
            except (requests.ConnectionError, requests.Timeout):
                assert process.poll() is None, f"the {kind} server exited:\n{server.output()}"
                assert time.monotonic() < deadline, f"the {kind} server did not start"
                time.sleep(0.1)
        yield server
    finally:
        process.terminate()
        try:
            process.wait(15)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait(5)


def _gunicorn_has_control_socket() -> bool:
    """Whether this gunicorn opens a control socket, at a path every server shares unless
    told otherwise (``--no-control-socket``)."""
    from gunicorn.config import KNOWN_SETTINGS

    return any(setting.name == "control_socket_disable" for setting in KNOWN_SETTINGS)
