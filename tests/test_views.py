"""The key file served by indexnow_django.urls."""

import re

import pytest
from django.core.management import call_command

KEY = "test-key-0123456789"


def test_key_file_answers_exactly_the_key(client):
    response = client.get(f"/{KEY}.txt")
    assert response.status_code == 200
    assert response["Content-Type"] == "text/plain; charset=utf-8"
    assert response.content == KEY.encode()


def test_head_answers_without_body(client):
    response = client.head(f"/{KEY}.txt")
    assert response.status_code == 200
    assert response.content == b""


def test_other_names_are_404(client):
    assert client.get("/some-other-key-1234.txt").status_code == 404
    assert client.get(f"/{KEY}.TXT").status_code == 404
    assert client.get("/robots.txt").status_code == 404


def test_post_is_not_allowed(client):
    assert client.post(f"/{KEY}.txt").status_code == 405


@pytest.fixture
def per_host(indexnow_settings):
    indexnow_settings(
        HOSTS={
            "www.example.com": {},
            "blog.example.com": {"KEY": "blog-key-abcdefgh"},
        }
    )


def test_per_host_keys(client, per_host):
    blog = client.get("/blog-key-abcdefgh.txt", HTTP_HOST="blog.example.com")
    assert blog.status_code == 200 and blog.content == b"blog-key-abcdefgh"
    # Each host answers for its own key only.
    assert client.get(f"/{KEY}.txt", HTTP_HOST="blog.example.com").status_code == 404
    assert client.get("/blog-key-abcdefgh.txt", HTTP_HOST="www.example.com").status_code == 404
    assert client.get(f"/{KEY}.txt", HTTP_HOST="www.example.com").content == KEY.encode()


def test_invalid_settings_give_404_not_500(client, indexnow_settings):
    indexnow_settings(KEY="bad")
    assert client.get("/bad.txt").status_code == 404


def test_indexnow_key_prints_a_new_key():
    from io import StringIO

    first, second = StringIO(), StringIO()
    call_command("indexnow_key", stdout=first)
    call_command("indexnow_key", stdout=second)
    assert re.fullmatch(r"[0-9a-f]{32}\n", first.getvalue())
    assert first.getvalue() != second.getvalue()
