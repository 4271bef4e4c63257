"""The key file served by indexnow_django.urls."""

import re

import pytest
from django.core.management import call_command
from django.urls import resolve

from tests.needs import AT_ONCE

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


def test_key_file_may_be_cached_for_a_day_and_does_not_vary_with_one_key(client):
    response = client.get(f"/{KEY}.txt")
    assert response["Cache-Control"] == "public, max-age=86400"
    assert not response.has_header("Vary")


def test_key_file_varies_with_host_when_keys_are_per_host(client, per_host):
    response = client.get("/blog-key-abcdefgh.txt", HTTP_HOST="blog.example.com")
    assert response["Cache-Control"] == "public, max-age=86400"
    assert response["Vary"] == "Host"
    assert client.get(f"/{KEY}.txt", HTTP_HOST="www.example.com")["Vary"] == "Host"


def test_previous_keys_files_are_still_served(client, indexnow_settings):
    indexnow_settings(PREVIOUS_KEYS=["old-key-12345678"])

    old = client.get("/old-key-12345678.txt")
    assert old.status_code == 200 and old.content == b"old-key-12345678"
    assert client.get(f"/{KEY}.txt").content == KEY.encode()
    assert client.get("/older-key-1234567.txt").status_code == 404


def test_per_host_previous_keys_sit_next_to_the_hosts_key(client, indexnow_settings):
    indexnow_settings(
        PREVIOUS_KEYS=["old-main-1234567"],
        HOSTS={
            "www.example.com": {},
            "blog.example.com": {"KEY": "blog-key-abcdefgh", "PREVIOUS_KEYS": ["blog-old-1234567"]},
            "shop.example.com": {"KEY": "shop-key-abcdefgh"},
        },
    )

    def status(name, host):
        return client.get(f"/{name}.txt", HTTP_HOST=host).status_code

    assert status("blog-old-1234567", "blog.example.com") == 200
    assert status("blog-old-1234567", "www.example.com") == 404
    # A host with the main key keeps the main key's predecessors; one with its own does not.
    assert status("old-main-1234567", "www.example.com") == 200
    assert status("old-main-1234567", "blog.example.com") == 404
    assert status("old-main-1234567", "shop.example.com") == 404


@pytest.mark.indexnow(**AT_ONCE)
def test_nothing_is_sent_with_a_previous_key(engine, indexnow_settings):
    from indexnow_django.units.dispatch import dispatch

    indexnow_settings(
        PREVIOUS_KEYS=["old-key-12345678"],
        HOSTS={
            "www.example.com": {},
            "blog.example.com": {"KEY": "blog-key-abcdefgh", "PREVIOUS_KEYS": ["blog-old-1234567"]},
        },
    )

    dispatch(["/a/", "https://blog.example.com/b/"])

    assert sorted(post.json["key"] for post in engine.posts) == [
        "blog-key-abcdefgh",
        "test-key-0123456789",
    ]


@pytest.mark.urls("tests.urls_key_file_first")
@pytest.mark.parametrize("name", ["robots", "ads", "llms", "llms-full", "some-other-key-1234"])
def test_any_other_txt_file_falls_through_to_the_sites_next_pattern(client, name):
    """The include first in ``urlpatterns``: the site's own ``*.txt`` files still answer."""
    response = client.get(f"/{name}.txt")

    assert response.status_code == 200
    assert response.content == f"the site's own /{name}.txt".encode()
    assert resolve(f"/{name}.txt").func.__name__ == "text_file"


@pytest.mark.urls("tests.urls_key_file_first")
@pytest.mark.django_db
def test_with_the_include_first_every_served_key_still_answers(client, indexnow_settings):
    from django.contrib.sites.models import Site

    from tests.testapp.tenants import tenant_key

    indexnow_settings(PREVIOUS_KEYS=["old-key-12345678"], HOSTS="tests.testapp.tenants.hosts")
    Site.objects.create(domain="acme.tenants.test", name="acme")  # a tenant added at run time
    acme = tenant_key("acme.tenants.test")

    assert client.get(f"/{KEY}.txt").content == KEY.encode()
    assert client.get("/old-key-12345678.txt").content == b"old-key-12345678"
    assert client.get(f"/{acme}.txt", HTTP_HOST="acme.tenants.test").content == acme.encode()
    # Another host's key is no file of this host's: the view answers 404 for it.
    assert client.get(f"/{acme}.txt", HTTP_HOST="www.example.com").status_code == 404
    assert client.head(f"/{KEY}.txt")["Content-Type"] == "text/plain; charset=utf-8"
