"""Keys and engine credentials never appear in full in what the package writes."""

import contextlib
import json
import logging
from io import StringIO

import pytest

from indexnow_django.conf import get_settings
from indexnow_django.protocol.masking import mask_key, mask_keys, mask_url, mask_url_in
from indexnow_django.testing import Reply
from tests.needs import ONE_JOB

KEY = "abcd0123456789efwxyz"


def test_a_key_shows_its_first_four_characters():
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
    from indexnow_django.transports.rq.queue import META_BATCH_ID
    from indexnow_django.units.dispatch import dispatch
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
    from indexnow_django.units.collector import batch

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


# --------------------------------------------------------------------------- nowhere in full

#: Keys of a site with a key per host and a key being rotated out.
MAIN_KEY = "main-7f3a9c2e5b8d1f4a6c0e"
SHOP_KEY = "shop-2b9e4d7a1c8f3e6b0d5a"
OLD_KEY = "oldk-5d1c8b4e7a2f9c3e6b0a"
SITE_KEYS = (MAIN_KEY, SHOP_KEY, OLD_KEY)
SITE = {
    "KEY": MAIN_KEY,
    "PREVIOUS_KEYS": [OLD_KEY],
    "BASE_URL": "https://www.example.com",
    "HOSTS": {"www.example.com": {}, "shop.example.com": {"KEY": SHOP_KEY}},
}


def assert_no_key(text: str, where: str) -> None:
    for key in SITE_KEYS:
        assert key not in text, f"{key!r} in {where}:\n{text}"
        assert key[4:] not in text, f"the end of {key!r} in {where}:\n{text}"


def test_repr_of_the_settings_and_of_each_host_shows_the_keys_masked(indexnow_settings):
    indexnow_settings(**SITE)
    conf = get_settings()

    shown = repr(conf)
    assert "key='main…'" in shown and "previous_keys=('oldk…',)" in shown
    assert_no_key(shown, "repr(settings)")
    for host in conf.hosts.values():
        assert host.host in repr(host)
        assert_no_key(repr(host), f"repr({host.host})")
    assert "key='shop…'" in repr(conf.hosts["shop.example.com"])
    assert_no_key(str(conf.hosts), "the hosts' repr")


def test_the_settings_fingerprint_is_keyed_with_the_secret_key(settings):
    """What a worker records in Redis of its settings: equal settings, equal fingerprint, but
    only for who holds SECRET_KEY (a short key cannot be found by hashing guesses)."""
    from indexnow_django.conf import settings_fingerprint

    settings.INDEXNOW = SITE
    here = settings_fingerprint()
    assert settings_fingerprint() == here
    settings.SECRET_KEY = "another-secret-key-of-this-site"
    assert settings_fingerprint()["fingerprint"] != here["fingerprint"]
    assert settings_fingerprint()["DRY_RUN"] is False


@pytest.mark.urls("tests.urls_broken")
def test_the_debug_error_page_shows_no_key(client, settings, indexnow_settings):
    """Django's technical 500 page shows the settings (INDEXNOW's keys cleansed by their
    names) and the local variables of each frame (the settings object's and a host's repr)."""
    indexnow_settings(**SITE)
    settings.DEBUG = True
    client.raise_request_exception = False

    response = client.get("/broken/", HTTP_ACCEPT="text/html")

    assert response.status_code == 500
    page = response.content.decode()
    assert "IndexNowSettings(" in page and "HostConfig(" in page  # the frames' locals
    assert "INDEXNOW" in page
    assert_no_key(page, "the debug page")
    text = client.get("/broken/", HTTP_ACCEPT="text/plain").content.decode()
    assert "IndexNowSettings(" in text
    assert_no_key(text, "the debug page as text")


def redis_dump(conn) -> str:
    """Every key and value of every database of the suite's Redis, as text (rq's compressed
    job data and results uncompressed)."""
    import zlib

    import redis

    def values(db: redis.Redis, name: bytes) -> list[bytes]:
        kind = db.type(name).decode()
        if kind == "string":
            return [db.get(name)]
        if kind == "hash":
            return [part for pair in db.hgetall(name).items() for part in pair]
        if kind == "list":
            return db.lrange(name, 0, -1)
        if kind in ("set", "zset"):
            return list(db.smembers(name) if kind == "set" else db.zrange(name, 0, -1))
        return [part for _, fields in db.xrange(name) for pair in fields.items() for part in pair]

    lines: list[str] = []
    for number in conn.info("keyspace"):
        server = conn.connection_pool.connection_kwargs
        with redis.Redis(server["host"], server["port"], int(number.removeprefix("db"))) as db:
            for name in db.scan_iter(count=1000):
                lines.append(f"{number} {name.decode(errors='replace')}")
                for value in values(db, name):
                    lines.append(value.decode(errors="replace"))
                    with contextlib.suppress(zlib.error):
                        lines.append(zlib.decompress(value).decode(errors="replace"))
    return "\n".join(lines)


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)  # the worker writes the history
def test_a_whole_delivery_cycle_leaves_the_key_nowhere(
    engine, indexnow_settings, start_worker, redis_conn, caplog, client, django_user_model
):
    """Accepted, 403, 429 until the job fails, through a real worker at DEBUG: no log line,
    failed job, admin page, history row or Redis key or value holds a key in full."""
    from django.apps import apps
    from django.core import serializers

    from indexnow_django.models import Delivery
    from indexnow_django.transports.rq.queue import META_BATCH_ID
    from indexnow_django.units.dispatch import dispatch
    from tests.rqhelpers import (
        all_job_ids,
        exc_string,
        failed_ids,
        fetch,
        wait_for_batch,
        wait_for_count,
    )

    overrides = {
        **ONE_JOB,
        **SITE,
        "RETRY": {"MAX_ATTEMPTS": 2, "BASE_DELAY": 1, "SERVER_ERROR_DELAY": 1},
    }
    indexnow_settings(**overrides)
    debug_logging = {
        "LOGGING": {
            "version": 1,
            "disable_existing_loggers": False,
            "handlers": {"console": {"class": "logging.StreamHandler"}},
            "root": {"handlers": ["console"], "level": "DEBUG"},
            "loggers": {"indexnow_django": {"level": "DEBUG"}},
        }
    }
    worker = start_worker(
        overrides, extra_env={"INDEXNOW_TEST_SETTINGS": json.dumps(debug_logging)}
    )
    caplog.set_level(logging.DEBUG)
    caplog.set_level(logging.DEBUG, logger="indexnow_django")
    # The engines quote the key and the key file in their answers.
    quoting = f"key {MAIN_KEY} / {SHOP_KEY} at https://shop.example.com/{SHOP_KEY}.txt"

    def delivered(urls, *replies, jobs=1, status):
        engine.queue_replies(*replies)
        before = all_job_ids(redis_conn)
        dispatch(urls)
        # Kept as seen: between rq's queue and its started registry a job is in neither.
        new: set[str] = set()

        def seen() -> int:
            new.update(all_job_ids(redis_conn) - before)
            return len(new)

        wait_for_count(seen, 1)
        job_id = min(new)  # its retries are of its batch
        batch_id = fetch(redis_conn, job_id).meta[META_BATCH_ID]
        return wait_for_batch(redis_conn, batch_id, jobs, status, timeout=30)

    delivered(
        ["/accepted/", "https://shop.example.com/accepted/"],
        Reply(200),
        Reply(202, body=quoting),
        status="finished",
    )
    delivered(["https://shop.example.com/forbidden/"], Reply(403, body=quoting), status="failed")
    delivered(
        ["/busy/"],
        Reply(429, body=quoting, headers={"Retry-After": "1"}),
        Reply(429, body=quoting, headers={"Retry-After": "1"}),
        jobs=2,
        status="failed",
    )

    keys_sent = sorted(post.json["key"] for post in engine.posts)
    assert keys_sent == [MAIN_KEY, MAIN_KEY, MAIN_KEY, SHOP_KEY, SHOP_KEY]  # the engines get them
    failed = [fetch(redis_conn, job_id) for job_id in failed_ids(redis_conn)]
    assert len(failed) == 2
    for job in failed:
        assert_no_key(exc_string(job), f"failed job {job.id}'s exc_info")
    assert_no_key(worker.output(), "the worker's output")
    assert_no_key(
        "\n".join(f"{r.getMessage()} {r.exc_text or ''}" for r in caplog.records), "log records"
    )

    rows = [
        serializers.serialize("json", model.objects.all())
        for model in apps.get_app_config("indexnow").get_models()
    ]
    assert Delivery.objects.count() >= 5
    assert_no_key("\n".join(rows), "the app's tables")

    dump = redis_dump(redis_conn)
    assert "rq:job:" in dump and "https://shop.example.com/forbidden/" in dump
    assert_no_key(dump, "Redis")

    admin = django_user_model.objects.create_superuser("admin", "admin@example.com", "pw")
    client.force_login(admin)
    pages = [
        "/admin/indexnow/delivery/",
        "/admin/indexnow/delivery/submit/",
        "/admin/indexnow/delivery/report/",
    ]
    pages += [
        f"/admin/indexnow/delivery/{pk}/change/"
        for pk in Delivery.objects.values_list("pk", flat=True)
    ]
    shown = []
    for page in pages:
        response = client.get(page)
        assert response.status_code == 200, page
        shown.append(response.content.decode())
        assert_no_key(shown[-1], page)
    assert any("key main… / shop… at https://shop.example.com/shop….txt" in s for s in shown)
