"""The HTTP transport against a real HTTP server on 127.0.0.1: what a POST brings back.

What an answer means for the engines is the client's (tests/test_client.py, which
also covers the deadline through the client).
"""

from __future__ import annotations

import json
import time

import pytest

from indexnow_django.protocol.http import MAX_BODY_BYTES, HTTPSession, NoAnswer
from indexnow_django.testing import Reply
from tests.services import free_port

HEADERS = {"Content-Type": "application/json; charset=utf-8"}


def test_an_answer_of_any_status_comes_back_whole_with_its_headers(engine):
    engine.queue_replies(Reply(429, "slow down", headers={"Retry-After": "7"}))
    answer = HTTPSession().post(engine.url, b'{"a": 1}', HEADERS, timeout=3)
    assert (answer.status, answer.reason, answer.text) == (429, "Too Many Requests", "slow down")
    assert answer.headers["retry-after"] == "7"  # any case, as HTTP has it
    [post] = engine.posts
    assert json.loads(post.body) == {"a": 1}
    assert post.headers["Content-Type"] == HEADERS["Content-Type"]


def test_only_a_prefix_of_a_long_body_is_read(engine):
    engine.queue_replies(Reply(200, b"y" * (4 * MAX_BODY_BYTES)))
    answer = HTTPSession().post(engine.url, b"{}", HEADERS, timeout=3)
    assert answer.text == "y" * MAX_BODY_BYTES


def test_a_refused_connection_is_an_error_that_is_not_a_timeout():
    with pytest.raises(NoAnswer) as caught:
        HTTPSession().post(f"http://127.0.0.1:{free_port()}/indexnow", b"{}", HEADERS, timeout=3)
    assert caught.value.timed_out is False
    assert type(caught.value.error).__name__ == "ConnectionError"


def test_a_trickled_body_is_cut_at_the_deadline(engine):
    # A byte every 0.5 s of a body that would take days: the POST returns only if it is
    # cut before the body is whole.
    engine.queue_replies(Reply(200, "z" * 50, trickle=0.5, repeat=10_000))
    started = time.monotonic()
    with pytest.raises(NoAnswer) as caught:
        HTTPSession().post(engine.url, b"{}", HEADERS, timeout=1.5)
    assert caught.value.timed_out is True
    assert type(caught.value.error).__name__ == "DeadlineExceeded"
    assert time.monotonic() - started >= 1.5
