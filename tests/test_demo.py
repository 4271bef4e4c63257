"""The example project's demo, run as a person runs it: one command, then everything stops."""

from __future__ import annotations

import importlib.util
import os
import re
import signal
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
import redis
import requests

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "example_project" / "demo.py"

#: Bounds on waits for the demo, there only to stop a test that hangs: the demo bounds
#: each of its own steps (20 s for an engine's answer, 15 s to stop each process it
#: started) and ends, printing why, when one is exceeded. A busy machine makes it slow,
#: never wrong: the test waits for what it prints, or for its end.
DEMO_RUNS_AT_MOST = 240.0
DEMO_STOPS_AT_MOST = 120.0


def demo_env() -> dict[str, str]:
    """The environment of a fresh shell: none of the suite's services or settings.

    Without ``REDIS_URL`` the demo starts its own Redis (a redis-server from PATH). The
    package is imported from this checkout, whatever else the environment has installed.
    """
    env = {
        name: value
        for name, value in os.environ.items()
        if name != "REDIS_URL" and not name.startswith(("INDEXNOW", "DJANGO_"))
    }
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), env.get("PYTHONPATH")]))
    return env


def started_pids(output: str, count: int = 3) -> list[int]:
    """The pids the demo printed: dev server, worker and (when it started one) redis-server."""
    pids = re.findall(r"^  (?:site|worker|redis) .*\bpid (\d+)\)?$", output, re.M)
    assert len(pids) == count, output
    return [int(pid) for pid in pids]


def assert_stopped(pids: list[int]) -> None:
    """Each process the demo started is gone, with whatever it started in its session."""
    deadline = time.monotonic() + 30
    for pid in pids:
        while True:
            try:
                os.killpg(pid, 0)
            except ProcessLookupError:
                break
            assert time.monotonic() < deadline, f"process group {pid} still runs"
            time.sleep(0.1)


def steps(output: str) -> dict[str, str]:
    """``{step title: what the demo printed for it}``."""
    parts = re.split(r"^\[\d+\] (.+)$", output, flags=re.M)
    return {parts[i]: parts[i + 1] for i in range(1, len(parts), 2)}


@pytest.mark.slow
def test_the_tour_shows_each_submission_and_stops_everything():
    result = subprocess.run(
        [sys.executable, str(DEMO)],
        env=demo_env(),
        capture_output=True,
        text=True,
        timeout=DEMO_RUNS_AT_MOST,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output

    site = re.search(r"^  site\s+(http://127\.0\.0\.1:\d+)/", output, re.M)
    assert site is not None, output
    url = site.group(1)
    tour = steps(output)
    assert list(tour) == [
        "Write a draft post",
        "Publish it",
        "Change its slug",
        "Schedule a post 5 seconds ahead",
        "Unpublish the first post",
        "Delete the scheduled post",
        "The engine answers 429 Too Many Requests (Retry-After: 2)",
        "The engine answers 403 Forbidden (the key file does not match)",
    ]

    def posts(title: str) -> list[tuple[str, list[str]]]:
        """``(status, URLs)`` of each POST the engine received during a step."""
        found = []
        for block in re.split(r"^ +engine <- POST ", tour[title], flags=re.M)[1:]:
            status = re.search(r"answered (\d+)", block)
            assert status is not None, block
            # One URL a line: plain, or quoted in the JSON body shown for the first POST.
            urls = re.findall(rf'^\s+"?({re.escape(url)}/[^\s",]*)"?,?$', block, re.M)
            found.append((status.group(1), urls))
        return found

    assert "engine: nothing received" in tour["Write a draft post"]
    assert posts("Write a draft post") == []
    assert posts("Publish it") == [
        ("200", [f"{url}/posts/hello-indexnow/", f"{url}/category/news/"])
    ]
    ((status, urls),) = posts("Change its slug")
    assert status == "200"
    assert sorted(urls) == sorted(
        [f"{url}/posts/hello-indexnow/", f"{url}/posts/hello-again/", f"{url}/category/news/"]
    )
    assert posts("Schedule a post 5 seconds ahead") == [
        ("200", [f"{url}/posts/coming-soon/", f"{url}/category/news/"])
    ]
    assert "rq holds a scheduled job: indexnow-publish-" in tour["Schedule a post 5 seconds ahead"]
    assert posts("Unpublish the first post") == [
        ("200", [f"{url}/posts/hello-again/", f"{url}/category/news/"])
    ]
    assert posts("Delete the scheduled post") == [
        ("200", [f"{url}/posts/coming-soon/", f"{url}/category/news/"])
    ]
    assert posts("The engine answers 429 Too Many Requests (Retry-After: 2)") == [
        ("429", [f"{url}/pages/about/"]),
        ("200", [f"{url}/pages/about/"]),
    ]
    rejected = "The engine answers 403 Forbidden (the key file does not match)"
    assert posts(rejected) == [("403", [f"{url}/pages/about/"])]
    assert "is in the failed job registry" in tour[rejected]
    assert "SubmissionRejected" in tour[rejected]

    assert "Tour complete: 8 steps, 8 POSTs received by the engine" in output
    assert_the_docs_show(output)
    assert "History: 8 POSTs recorded (6 accepted, 1 rejected, 1 retry)." in output
    # After "Stopped." no address of the stopped site: how to keep it running instead.
    after = output[output.rindex("Stopped.") :].splitlines()
    assert after[-1] == "  python example_project/demo.py --serve", output
    assert not any(url in line for line in after), output
    assert_stopped(started_pids(output))


def demo_shape(text: str) -> list[str]:
    """Lines of the demo's output with what changes from run to run (ports, the key, the
    seconds a POST came after its change) replaced by placeholders."""
    text = re.sub(r"127\.0\.0\.1:\d+", "127.0.0.1:PORT", text)
    text = re.sub(r"demo-key-[0-9a-f]+", "demo-key-KEY", text)
    text = re.sub(r"\d+\.\d+ s after the change", "N s after the change", text)
    return [line.rstrip() for line in text.splitlines()]


def assert_the_docs_show(output: str) -> None:
    """docs/demo.md quotes the tour as it prints today: its lines, in order, and POSTs no
    sooner after their change than this run's soonest."""
    page = (ROOT / "docs" / "demo.md").read_text()
    [quoted] = re.findall(r"^```text\n(\[2\] Publish it\n.*?)^```", page, re.M | re.S)
    printed = demo_shape(output)
    start = printed.index("[2] Publish it")
    shown = demo_shape(quoted)
    assert printed[start : start + len(shown)] == shown, "docs/demo.md shows another tour"
    seconds = [float(s) for s in re.findall(r"([\d.]+) s after the change", output)]
    for documented in re.findall(r"([\d.]+) s after the change", quoted):
        assert float(documented) >= min(seconds), (documented, seconds)


class Reader:
    """Collects a process's output lines in a thread, and waits for one of them.

    The thread ends when the output does (the process and whatever inherited its
    output are gone): a wait for a line that never came then fails at once.
    """

    def __init__(self, proc: subprocess.Popen[str]) -> None:
        self.lines: list[str] = []
        self.ended = False
        self._changed = threading.Condition()
        self._thread = threading.Thread(target=self._read, args=(proc,), daemon=True)
        self._thread.start()

    def _read(self, proc: subprocess.Popen[str]) -> None:
        assert proc.stdout is not None
        try:
            for line in proc.stdout:
                with self._changed:
                    self.lines.append(line.rstrip("\n"))
                    self._changed.notify_all()
        finally:
            with self._changed:
                self.ended = True
                self._changed.notify_all()

    def wait_for(self, pattern: str, timeout: float = DEMO_RUNS_AT_MOST) -> re.Match[str]:
        deadline = time.monotonic() + timeout
        with self._changed:
            while True:
                for line in self.lines:
                    match = re.search(pattern, line)
                    if match:
                        return match
                remaining = deadline - time.monotonic()
                if remaining <= 0 or self.ended:
                    why = "the demo's output ended" if self.ended else f"{timeout:g}s passed"
                    pytest.fail(
                        f"no line matching {pattern!r} ({why}) in:\n" + "\n".join(self.lines)
                    )
                self._changed.wait(remaining)

    def join(self, timeout: float) -> None:
        """Wait for the end of the output (the pipe's last writer is gone)."""
        self._thread.join(timeout)
        assert not self._thread.is_alive(), "the demo's output is still open:\n" + self.text

    @property
    def text(self) -> str:
        with self._changed:
            return "\n".join(self.lines)


@pytest.mark.slow
def test_serve_prints_what_the_engine_receives_and_ctrl_c_stops_everything():
    proc = subprocess.Popen(
        [sys.executable, str(DEMO), "--serve", "--port", "0"],
        env=demo_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    out = Reader(proc)
    try:
        admin = out.wait_for(r"^  admin\s+(http://127\.0\.0\.1:\d+)/admin/").group(1)
        # The tour runs first: the site is left with its history.
        out.wait_for(r"^Tour complete: 8 steps")
        out.wait_for(r"^Press Ctrl-C to stop\.$")
        assert f"The tour's POSTs are in the history: {admin}/admin/indexnow/delivery/" in out.text
        tour_lines = len(out.lines)

        # An editor adds a page in the admin.
        session = requests.Session()
        session.get(f"{admin}/admin/login/", timeout=10).raise_for_status()
        login = session.post(
            f"{admin}/admin/login/?next=/admin/",
            data={
                "username": "admin",
                "password": "admin",
                "next": "/admin/",
                "csrfmiddlewaretoken": session.cookies["csrftoken"],
            },
            allow_redirects=False,
            timeout=10,
        )
        assert login.status_code == 302
        added = session.post(
            f"{admin}/admin/blog/page/add/",
            data={
                "title": "Contact",
                "slug": "contact",
                "body": "Write to us.",
                "_save": "1",
                "csrfmiddlewaretoken": session.cookies["csrftoken"],
            },
            allow_redirects=False,
            timeout=10,
        )
        assert added.status_code == 302

        out.wait_for(r"^\[engine\] engine <- POST /indexnow answered 200")
        out.wait_for(rf"^\[engine\] +{re.escape(admin)}/pages/contact/$")
        # The history holds the tour's 8 POSTs, and this one once the worker recorded it.
        deadline = time.monotonic() + DEMO_RUNS_AT_MOST
        while True:
            history = session.get(f"{admin}/admin/indexnow/delivery/", timeout=10).text
            records = len(re.findall(r'href="/admin/indexnow/delivery/\d+/change/', history))
            if records >= 9 or time.monotonic() > deadline:
                break
            time.sleep(0.2)
        assert records == 9

        # The admin's static files are left out of what the terminal shows; other requests not.
        session.get(f"{admin}/static/admin/css/base.css", timeout=10)
        session.get(f"{admin}/admin/?after-static", timeout=10)
        out.wait_for(r'^\[web\] .*"GET /admin/\?after-static HTTP')
        relayed = out.lines[tour_lines:]
        assert any(line.startswith("[worker] ") for line in relayed), out.text
        assert not [line for line in relayed if "/static/" in line]

        proc.send_signal(signal.SIGINT)
        assert proc.wait(DEMO_STOPS_AT_MOST) == 130, out.text
    finally:
        if proc.poll() is None:
            # SIGTERM: the demo stops what it started (each child in a session of its own,
            # which a SIGKILL of the demo would leave running).
            proc.terminate()
            try:
                proc.wait(DEMO_STOPS_AT_MOST)
            except subprocess.TimeoutExpired:
                proc.kill()
                proc.wait(10)
        # Whatever happened above, the pipe is read to its end and closed here, so that
        # nothing of this test is left open for a later one.
        try:
            out.join(10)
        finally:
            assert proc.stdout is not None
            proc.stdout.close()
    assert out.lines[-1] == "Stopped.", out.text
    assert "Interrupted." in out.text
    assert_stopped(started_pids(out.text))


@pytest.mark.slow
def test_a_reachable_redis_url_is_used_with_a_queue_of_its_own(redis_url):
    """The demo uses the caller's Redis, but keeps its jobs off the queues other workers read."""
    result = subprocess.run(
        [sys.executable, str(DEMO)],
        env={**demo_env(), "REDIS_URL": f"{redis_url}/0"},
        capture_output=True,
        text=True,
        timeout=DEMO_RUNS_AT_MOST,
    )
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert re.search(rf"^  Redis\s+{re.escape(redis_url)}/0  \(REDIS_URL\)$", output, re.M), output
    queue = re.search(r"manage\.py rqworker (indexnow-demo-\d+) --with-scheduler", output)
    assert queue is not None, output
    assert "Tour complete: 8 steps, 8 POSTs received by the engine" in output
    assert_the_docs_show(output)
    assert_stopped(started_pids(output, count=2))
    # Nothing of the demo is left in the caller's Redis: no queue, no job, no registry.
    name = queue.group(1).encode()
    conn = redis.Redis.from_url(f"{redis_url}/0")
    try:
        left = [
            key
            for key in conn.scan_iter()
            if name in key or (conn.type(key) == b"hash" and conn.hget(key, "origin") == name)
        ]
    finally:
        conn.close()
    assert left == []


def test_lines_relayed_from_the_children_never_split_a_line_of_the_demo(capsys, monkeypatch):
    """The demo prints from several threads (its own lines, each child's output): a line
    is always whole, so ``site ... (pid N)`` is never cut by a child's line."""
    spec = importlib.util.spec_from_file_location("indexnow_demo_script", DEMO)
    assert spec is not None and spec.loader is not None
    demo = importlib.util.module_from_spec(spec)
    monkeypatch.setitem(sys.modules, spec.name, demo)  # its dataclasses look it up there
    spec.loader.exec_module(demo)
    expected = {f"[thread {n}] line of the demo {'x' * n}" for n in range(4)}

    def talk(text: str) -> None:
        for _ in range(3000):
            demo.say(text)

    threads = [threading.Thread(target=talk, args=(text,)) for text in sorted(expected)]
    interval = sys.getswitchinterval()
    sys.setswitchinterval(1e-6)  # threads take turns often, as busy children make them
    try:
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
    finally:
        sys.setswitchinterval(interval)
    lines = capsys.readouterr().out.splitlines()
    assert len(lines) == 12000
    assert set(lines) == expected
