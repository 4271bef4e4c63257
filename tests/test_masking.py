"""Keys and engine credentials never appear in full in what the package writes."""

import pytest

from indexnow_django.conf import get_settings
from indexnow_django.masking import mask_key, mask_keys, mask_url

KEY = "abcd0123456789efwxyz"


def test_a_key_shows_its_first_and_last_four_characters():
    assert mask_key(KEY) == "abcd…wxyz"
    assert mask_key("12345678") == "********"
    assert mask_key(None) == "<none>"


def test_every_key_is_masked_wherever_it_appears_in_a_text():
    other = "other-key-0000-9999"
    text = f"403 from engine; the engine fetches https://h/{KEY}.txt, body {KEY!r} and {other}"
    assert mask_keys(text, [KEY, other, None]) == (
        "403 from engine; the engine fetches https://h/abcd…wxyz.txt, body 'abcd…wxyz' "
        "and othe…9999"
    )


def test_the_key_file_url_of_a_host_is_shown_with_the_key_masked(settings):
    settings.INDEXNOW = {
        "KEY": KEY,
        "BASE_URL": "https://www.example.com",
        "HOSTS": {"www.example.com": {}, "shop.example.com": {"KEY": "shop-key-12345678"}},
    }
    conf = get_settings()
    assert conf.hosts["www.example.com"].masked_key_file_url == (
        "https://www.example.com/abcd…wxyz.txt"
    )
    assert conf.hosts["shop.example.com"].masked_key_file_url == (
        "https://shop.example.com/shop…5678.txt"
    )
    assert conf.mask(f"{KEY} shop-key-12345678") == "abcd…wxyz shop…5678"


@pytest.mark.parametrize(
    ("url", "shown"),
    [
        ("https://api.indexnow.org/indexnow", "https://api.indexnow.org/indexnow"),
        ("https://bot:s3cret@engine.test/api", "https://bot:***@engine.test/api"),
        ("https://tok3n@engine.test:8443/api", "https://***@engine.test:8443/api"),
        (
            "http://engine.test/api?token=abc&region=eu#x",
            "http://engine.test/api?token=***&region=***#x",
        ),
    ],
)
def test_credentials_in_an_engine_url_are_hidden(url, shown):
    assert mask_url(url) == shown
