"""Keys and engine credentials never appear in full in what the package writes."""

import logging
from io import StringIO

import pytest

from indexnow_django.conf import get_settings
from indexnow_django.protocol.masking import mask_key, mask_keys, mask_url, mask_url_in
from indexnow_django.testing import Reply
from tests.needs import ONE_JOB

KEY = "abcd0123456789efwxyz"


def test_a_key_shows_its_first_and_last_four_characters():
    assert mask_key(KEY) == "abcd…"
    assert mask_key("12345678") == "********"
    assert mask_key(None) == "<none>"


def test_every_key_is_masked_wherever_it_appears_in_a_text():
    other = "other-key-0000-9999"
    text = f"403 from engine; the engine fetches https://h/{KEY}.txt, body {KEY!r} and {other}"
    assert mask_keys(text, [KEY, other, None]) == (
        "403 from engine; the engine fetches https://h/abcd….txt, body 'abcd…' and othe…"
    )


def test_the_key_file_url_of_a_host_is_shown_with_the_key_masked(settings):
    settings.INDEXNOW = {
        "KEY": KEY,
        "BASE_URL": "https://www.example.com",
        "HOSTS": {"www.example.com": {}, "shop.example.com": {"KEY": "shop-key-12345678"}},
    }
    conf = get_settings()
    assert conf.hosts["www.example.com"].masked_key_file_url == (
        "https://www.example.com/abcd….txt"
    )
    assert conf.hosts["shop.example.com"].masked_key_file_url == (
        "https://shop.example.com/shop….txt"
    )
    assert conf.mask(f"{KEY} shop-key-12345678") == "abcd… shop…"


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


def test_credentials_are_hidden_where_an_error_quotes_pieces_of_the_url():
    url = "https://bot:s3cret@engine.test/api?token=abc"
    text = (
        "HTTPSConnectionPool(host='engine.test', port=443): Max retries exceeded with url: "
        "/api?token=abc; proxy for bot:s3cret; https://bot:s3cret@engine.test/api?token=abc"
    )
    assert mask_url_in(text, url) == (
        "HTTPSConnectionPool(host='engine.test', port=443): Max retries exceeded with url: "
        "/api?token=***; proxy for bot:***; https://bot:***@engine.test/api?token=***"
    )
    assert mask_url_in(text, "https://engine.test/api") == text


# --------------------------------------------------------------------------- a 403, end to end

SUITE_KEY = "test-key-0123456789"
SECRETS = (SUITE_KEY, "s3cret", "tok123")


def engine_with_credentials(engine) -> str:
    return engine.url.replace("http://", "http://bot:s3cret@", 1) + "?token=tok123"


def forbidden() -> Reply:
    # An engine that quotes the key and the key file in its answer.
    return Reply(
        403,
        body=f"Key {SUITE_KEY} not verified at https://www.example.com/{SUITE_KEY}.txt",
    )


def assert_no_secret(text: str, where: str) -> None:
    for secret in SECRETS:
        assert secret not in text, f"{secret!r} in {where}:\n{text}"


@pytest.mark.worker
def test_a_403_through_a_worker_shows_no_key_and_no_engine_credentials(
    engine, indexnow_settings, start_worker, redis_conn, caplog
):
    from indexnow_django.dispatch import dispatch
    from indexnow_django.transports.rq.queue import META_BATCH_ID
    from tests.rqhelpers import exc_string, only_queued_job, wait_for_batch

    overrides = {
        **ONE_JOB,  # the flush's own job fails
        "ENGINES": [engine_with_credentials(engine)],
    }
    indexnow_settings(**overrides)
    engine.queue_replies(forbidden())
    caplog.set_level(logging.DEBUG, logger="indexnow_django")
    dispatch(["/a/"])
    job = only_queued_job(redis_conn)
    worker = start_worker(overrides)

    [failed] = wait_for_batch(redis_conn, job.meta[META_BATCH_ID], 1, "failed")

    [post] = engine.posts
    assert post.json["key"] == SUITE_KEY  # the engine itself gets the key
    failure = exc_string(failed)
    assert "403" in failure
    assert "https://www.example.com/test….txt" in failure
    assert_no_secret(failure, "the failed job's exc_info")
    output = worker.wait_for_output("403")
    assert_no_secret(output, "the worker's output")
    assert_no_secret("\n".join(r.getMessage() for r in caplog.records), "the log records")


@pytest.mark.django_db(transaction=True)  # the POST is recorded in the history
def test_a_403_in_process_logs_no_key_and_no_engine_credentials(engine, indexnow_settings, caplog):
    from indexnow_django import submit
    from indexnow_django.collector import batch

    indexnow_settings(DISPATCH="sync", ENGINES=[engine_with_credentials(engine)])
    engine.queue_replies(forbidden())
    caplog.set_level(logging.DEBUG, logger="indexnow_django")

    with batch():
        submit(["/a/"])

    assert len(engine.posts) == 1
    records = [r for r in caplog.records if r.name.startswith("indexnow_django")]
    [warning] = [r for r in records if r.levelno >= logging.WARNING]
    assert "403" in warning.getMessage()
    assert "engine=127.0.0.1:" in warning.getMessage()
    assert_no_secret("\n".join(r.getMessage() for r in records), "the log records")


@pytest.mark.django_db
def test_a_403_in_the_commands_output_shows_no_key(engine, indexnow_settings):
    from django.core.management import call_command
    from django.core.management.base import CommandError

    indexnow_settings(DISPATCH="sync", ENGINES=[engine_with_credentials(engine)])
    engine.queue_replies(forbidden())
    out, err = StringIO(), StringIO()

    with pytest.raises(CommandError) as raised:
        call_command("indexnow_submit", "/a/", "--sync", stdout=out, stderr=err)

    assert "403" in out.getvalue() + err.getvalue() + str(raised.value)
    assert_no_secret(out.getvalue() + err.getvalue() + str(raised.value), "indexnow_submit")

    out = StringIO()
    with pytest.raises(CommandError) as raised:
        call_command("indexnow_check", stdout=out)  # the key file is not served here
    assert_no_secret(out.getvalue() + str(raised.value), "indexnow_check")
    assert "bot:***@127.0.0.1" in out.getvalue() and "token=***" in out.getvalue()
