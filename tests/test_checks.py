"""System checks for settings.INDEXNOW: every id with its whole message."""

from pathlib import Path

import pytest
from django.core import checks
from django.core.management import call_command
from django.core.management.base import SystemCheckError

from indexnow_django.checks import check_key_file_url, check_settings
from indexnow_django.conf import get_settings
from indexnow_django.exceptions import IndexNowConfigError
from tests.services import run_django

ROOT = Path(__file__).resolve().parent.parent
VALID = {"KEY": "test-key-0123456789", "BASE_URL": "https://www.example.com"}
KEY_HINT = "manage.py indexnow_key prints a new random key."


def errors_for(settings, value, **extra):
    settings.INDEXNOW = value
    for name, setting in extra.items():
        setattr(settings, name, setting)
    return check_settings()


def test_valid_settings_have_no_errors(settings):
    assert errors_for(settings, VALID) == []


def test_missing_setting(settings):
    del settings.INDEXNOW
    assert check_settings() == [
        checks.Error(
            "settings.INDEXNOW is missing.",
            hint='Add INDEXNOW = {"KEY": "...", "BASE_URL": "https://www.example.com"} to your settings; '
            "manage.py indexnow_key prints a new key.",
            id="indexnow.E001",
        )
    ]


def test_not_a_dict(settings):
    assert errors_for(settings, ["KEY"]) == [
        checks.Error(
            "settings.INDEXNOW must be a dict, not list.",
            hint='Use INDEXNOW = {"KEY": "...", "BASE_URL": "https://www.example.com"}.',
            id="indexnow.E001",
        )
    ]


def test_unknown_key_suggests_the_right_one(settings):
    assert errors_for(settings, {**VALID, "ENGINE": ["bing"]}) == [
        checks.Error(
            "INDEXNOW has an unknown key 'ENGINE'.",
            hint="Did you mean 'ENGINES'? Allowed keys: KEY, KEY_LOCATION, BASE_URL, HOSTS, ENGINES, "
            "ENABLED, DRY_RUN, DISPATCH, COMMAND_UNITS, QUEUE, RETRY, BATCH, DEBOUNCE, HTTP, "
            "HISTORY, PREVIOUS_KEYS, THROTTLE, TASKS, PREFLIGHT, ALLOW_PRIVATE_HOSTS, CRAWL.",
            id="indexnow.E002",
        )
    ]


def test_unknown_nested_key(settings):
    assert errors_for(settings, {**VALID, "RETRY": {"MAX_ATTEMPT": 2}}) == [
        checks.Error(
            "INDEXNOW['RETRY'] has an unknown key 'MAX_ATTEMPT'.",
            hint="Did you mean 'MAX_ATTEMPTS'? Allowed keys: MAX_ATTEMPTS, BASE_DELAY, MULTIPLIER, "
            "MAX_DELAY, SERVER_ERROR_DELAY.",
            id="indexnow.E002",
        )
    ]


def test_missing_key(settings):
    assert errors_for(settings, {"BASE_URL": "https://www.example.com"}) == [
        checks.Error("INDEXNOW['KEY'] is required.", hint=KEY_HINT, id="indexnow.E003")
    ]


@pytest.mark.parametrize(
    ("key", "shown", "fault"),
    [
        ("short", "*****", "it has 5 characters"),
        ("x" * 129, "xxxx…", "it has 129 characters"),
        ("has space in it", "has …", "it holds ' '"),
        ("under_score_key", "unde…", "it holds '_'"),
        (12345678, "12345678", "it is int, not a string"),
    ],
)
def test_malformed_key(settings, key, shown, fault):
    assert errors_for(settings, {**VALID, "KEY": key}) == [
        checks.Error(
            f"INDEXNOW['KEY'] {shown} must be 8 to 128 characters of A-Z, a-z, 0-9 and '-': "
            f"{fault}.",
            hint=KEY_HINT,
            id="indexnow.E004",
        )
    ]


SECRET = "s3cr3t-key-from-a-file-0123456789"


@pytest.mark.parametrize(
    ("value", "fault"),
    [
        (
            f"{SECRET}\n",
            "it ends with a line break (as a file read whole gives it: strip it)",
        ),
        (f"{SECRET}\r\n", "it ends with a line break (as a file read whole gives it: strip it)"),
        (f"{SECRET} ", "it ends with white space"),
        (f" {SECRET}", "it starts with white space"),
    ],
)
def test_a_key_read_from_a_file_with_its_line_break_is_an_error_naming_it_masked(
    settings, value, fault
):
    """What ``open(".../indexnow_key").read()`` gives: refused wherever a key goes, the
    message naming it by its first four characters only."""
    message = f"must be 8 to 128 characters of A-Z, a-z, 0-9 and '-': {fault}."
    hosts = {"www.example.com": {}, "blog.example.com": {"KEY": value}}
    errors = errors_for(settings, {**VALID, "KEY": value, "PREVIOUS_KEYS": [value], "HOSTS": hosts})

    assert [(e.id, e.msg) for e in errors] == [
        ("indexnow.E004", f"INDEXNOW['KEY'] s3cr… {message}"),
        (
            "indexnow.E021",
            f"INDEXNOW['PREVIOUS_KEYS'] holds s3cr…, which is not {message.removeprefix('must be ')}",
        ),
        ("indexnow.E004", f"INDEXNOW['HOSTS']['blog.example.com']['KEY'] s3cr… {message}"),
    ]
    assert not any(SECRET in f"{e.msg} {e.hint}" for e in errors)
    settings.INDEXNOW = {**VALID, "KEY": value}
    with pytest.raises(IndexNowConfigError, match=r"line break|white space") as raised:
        get_settings()
    assert SECRET not in str(raised.value)


def test_a_key_printed_in_the_docs_is_an_error(settings):
    """A site that copied the quickstart's key instead of making one is told so."""
    value = {**VALID, "KEY": "0f5c1b2d3e4a5968778695a4b3c2d1e0"}
    assert errors_for(settings, value) == [
        checks.Error(
            "INDEXNOW['KEY'] is the example key from the documentation: anyone can read it, and "
            "the engines would take submissions signed with it for yours.",
            hint="Make your own with manage.py indexnow_key and put it in INDEXNOW['KEY'].",
            id="indexnow.E020",
        )
    ]


def test_a_per_host_key_printed_in_the_docs_is_an_error(settings):
    value = {
        **VALID,
        "HOSTS": {"www.example.com": {}, "shop.example.com": {"KEY": "9d8c7b6a5f4e3d2c"}},
    }
    assert [(e.id, e.msg.split(" is ")[0]) for e in errors_for(settings, value)] == [
        ("indexnow.E020", "INDEXNOW['HOSTS']['shop.example.com']['KEY']")
    ]


def test_bad_key_location(settings):
    assert errors_for(settings, {**VALID, "KEY_LOCATION": "/static/key.txt"}) == [
        checks.Error(
            "INDEXNOW['KEY_LOCATION'] must be an absolute http(s) URL or None.",
            hint="For example 'https://www.example.com/static/<KEY>.txt'.",
            id="indexnow.E005",
        )
    ]


def test_missing_base_url_without_sites(settings):
    settings.INSTALLED_APPS = [
        app for app in settings.INSTALLED_APPS if app != "django.contrib.sites"
    ]
    assert errors_for(settings, {"KEY": VALID["KEY"]}) == [
        checks.Error(
            "INDEXNOW['BASE_URL'] is required when django.contrib.sites does not give the domain.",
            hint="Set it to the scheme and host of your site, e.g. 'https://www.example.com'.",
            id="indexnow.E006",
        )
    ]


@pytest.mark.parametrize(
    ("base_url", "hint"),
    [
        (
            "www.example.com",
            "Start it with its scheme: 'https://www.example.com' (or 'http://www.example.com').",
        ),
        ("https://www.example.com/blog/", "Leave out any path, query or fragment."),
        ("https://www.example.com?lang=en", "Leave out any path, query or fragment."),
        ("ftp://x.org", "Use an http or https URL."),
    ],
)
def test_bad_base_url(settings, base_url, hint):
    assert errors_for(settings, {**VALID, "BASE_URL": base_url}) == [
        checks.Error(
            "INDEXNOW['BASE_URL'] must be a scheme and host such as 'https://www.example.com', "
            f"not {base_url!r}.",
            hint=hint,
            id="indexnow.E007",
        )
    ]


def test_bad_hosts(settings):
    assert errors_for(settings, {**VALID, "HOSTS": 42}) == [
        checks.Error(
            "INDEXNOW['HOSTS'] must be a list of host names, a dict "
            "{host: {'KEY': ..., 'KEY_LOCATION': ...}}, or the dotted path of a function "
            "that returns one.",
            id="indexnow.E008",
        )
    ]
    assert errors_for(settings, {**VALID, "HOSTS": "www.example.com"}) == [
        checks.Error(
            "INDEXNOW['HOSTS'] is 'www.example.com', which cannot be imported "
            "(No module named 'www').",
            hint="One host goes in a list: ['www.example.com']. Otherwise give a dict "
            "{host: {'KEY': ..., 'KEY_LOCATION': ...}}, or the dotted path of a function "
            "that returns the list or dict.",
            id="indexnow.E008",
        )
    ]
    assert errors_for(settings, {**VALID, "HOSTS": "tests.testapp.tenants.NOT_CALLABLE"}) == [
        checks.Error(
            "INDEXNOW['HOSTS'] is 'tests.testapp.tenants.NOT_CALLABLE', which is not callable.",
            hint="The dotted path names a function that returns the list or dict of hosts.",
            id="indexnow.E008",
        )
    ]
    # Imported only, not called: it may query tables that migrate has not made yet.
    assert errors_for(settings, {**VALID, "HOSTS": "tests.testapp.tenants.hosts"}) == []
    assert errors_for(settings, {**VALID, "HOSTS": ["https://www.example.com/"]}) == [
        checks.Error(
            "INDEXNOW['HOSTS'] has an invalid host 'https://www.example.com/'.",
            hint="Give bare host names such as 'www.example.com' (no scheme, no path).",
            id="indexnow.E008",
        )
    ]


def test_bad_per_host_key(settings):
    value = {**VALID, "HOSTS": {"www.example.com": {}, "blog.example.com": {"KEY": "bad key"}}}
    assert errors_for(settings, value) == [
        checks.Error(
            "INDEXNOW['HOSTS']['blog.example.com']['KEY'] ******* must be 8 to 128 characters of "
            "A-Z, a-z, 0-9 and '-': it holds ' '.",
            hint=KEY_HINT,
            id="indexnow.E004",
        )
    ]


@pytest.mark.parametrize(
    ("engines", "message"),
    [
        ("bing", "INDEXNOW['ENGINES'] must be a non-empty list of engine names or endpoint URLs."),
        ([], "INDEXNOW['ENGINES'] must be a non-empty list of engine names or endpoint URLs."),
        (
            ["google"],
            "INDEXNOW['ENGINES'] has an invalid entry: 'google' is neither a known engine "
            "(indexnow, bing, yandex, naver, seznam, yep) nor an http(s) URL.",
        ),
    ],
)
def test_bad_engines(settings, engines, message):
    assert errors_for(settings, {**VALID, "ENGINES": engines}) == [
        checks.Error(
            message,
            hint="Known names: indexnow, bing, yandex, naver, seznam, yep.",
            id="indexnow.E009",
        )
    ]


@pytest.mark.parametrize("flag", ["ENABLED", "DRY_RUN", "COMMAND_UNITS"])
def test_flags_must_be_booleans(settings, flag):
    assert errors_for(settings, {**VALID, flag: "no"}) == [
        checks.Error(f"INDEXNOW[{flag!r}] must be True or False, not 'no'.", id="indexnow.E010")
    ]


def test_bad_dispatch(settings):
    assert errors_for(settings, {**VALID, "DISPATCH": "celery"}) == [
        checks.Error(
            "INDEXNOW['DISPATCH'] must be one of 'auto', 'queue', 'sync', 'tasks', not 'celery'.",
            id="indexnow.E011",
        )
    ]


def test_nested_value_must_be_a_dict(settings):
    assert errors_for(settings, {**VALID, "RETRY": 3}) == [
        checks.Error(
            "INDEXNOW['RETRY'] must be a dict, not int.",
            hint="Allowed keys: MAX_ATTEMPTS, BASE_DELAY, MULTIPLIER, MAX_DELAY, SERVER_ERROR_DELAY.",
            id="indexnow.E012",
        )
    ]


def test_bad_queue_options(settings):
    assert errors_for(settings, {**VALID, "QUEUE": {"DELAY": -1, "TIMEOUT": "60"}}) == [
        checks.Error(
            "INDEXNOW['QUEUE']['DELAY'] must be a number of seconds >= 0, not -1.",
            id="indexnow.E013",
        ),
        checks.Error(
            "INDEXNOW['QUEUE']['TIMEOUT'] must be a number of seconds >= 1, not '60'.",
            id="indexnow.E013",
        ),
    ]


def test_queue_dispatch_needs_the_queue_in_rq_queues(settings):
    value = {**VALID, "DISPATCH": "queue", "QUEUE": {"NAME": "indexnow"}}
    assert errors_for(settings, value) == [
        checks.Error(
            "INDEXNOW['DISPATCH'] is 'queue' but INDEXNOW['QUEUE']['NAME'] 'indexnow' is not in RQ_QUEUES.",
            hint="Add 'indexnow' to RQ_QUEUES, or set INDEXNOW['QUEUE']['NAME'] to one of: default.",
            id="indexnow.E014",
        )
    ]


def test_non_numeric_retry_values(settings):
    value = {**VALID, "RETRY": {"MAX_ATTEMPTS": 0, "BASE_DELAY": "60", "MULTIPLIER": 0.5}}
    assert errors_for(settings, value) == [
        checks.Error(
            "INDEXNOW['RETRY']['MAX_ATTEMPTS'] must be a whole number >= 1, not 0.",
            id="indexnow.E015",
        ),
        checks.Error(
            "INDEXNOW['RETRY']['BASE_DELAY'] must be a number of seconds >= 0, not '60'.",
            id="indexnow.E015",
        ),
        checks.Error(
            "INDEXNOW['RETRY']['MULTIPLIER'] must be a number >= 1, not 0.5.", id="indexnow.E015"
        ),
    ]


@pytest.mark.parametrize("max_urls", [0, 10_001, "100", True])
def test_max_urls_outside_range(settings, max_urls):
    assert errors_for(settings, {**VALID, "BATCH": {"MAX_URLS": max_urls}}) == [
        checks.Error(
            f"INDEXNOW['BATCH']['MAX_URLS'] must be a whole number from 1 to 10000, not {max_urls!r}.",
            hint="The IndexNow protocol accepts at most 10,000 URLs per request.",
            id="indexnow.E016",
        )
    ]


def test_unknown_cache_alias_and_bad_ttl(settings):
    assert errors_for(settings, {**VALID, "DEBOUNCE": {"CACHE": "redis", "TTL": -5}}) == [
        checks.Error(
            "INDEXNOW['DEBOUNCE']['CACHE'] is 'redis', which is not in CACHES.",
            hint="Use one of: 'default', 'shared'.",
            id="indexnow.E017",
        ),
        checks.Error(
            "INDEXNOW['DEBOUNCE']['TTL'] must be a whole number of seconds >= 0, not -5.",
            hint="0 disables debouncing.",
            id="indexnow.E017",
        ),
    ]


def test_bad_http_timeout(settings):
    assert errors_for(settings, {**VALID, "HTTP": {"TIMEOUT": 0}}) == [
        checks.Error(
            "INDEXNOW['HTTP']['TIMEOUT'] must be a number of seconds > 0, not 0.",
            id="indexnow.E018",
        )
    ]


# Django 6.1's check command also runs the database checks, and a JSONField's model
# check (django-tasks-db's) asks every database whether it supports JSON.
@pytest.mark.django_db(databases="__all__")
def test_manage_py_check_reports_errors(settings):
    settings.INDEXNOW = {**VALID, "KEY": "bad"}
    with pytest.raises(SystemCheckError, match=r"indexnow\.E004"):
        call_command("check")


def test_runtime_refuses_invalid_settings_with_the_same_message(settings):
    settings.INDEXNOW = {**VALID, "DISPATCH": "later"}
    with pytest.raises(
        IndexNowConfigError, match=r"'auto', 'queue', 'sync', 'tasks', not 'later'.*indexnow.E011"
    ):
        get_settings()


def test_user_dict_is_not_mutated(settings):
    value = {**VALID, "RETRY": {"MAX_ATTEMPTS": 5}}
    settings.INDEXNOW = value
    conf = get_settings()
    assert conf.retry.max_attempts == 5 and conf.retry.base_delay == 60
    assert value == {**VALID, "RETRY": {"MAX_ATTEMPTS": 5}}


def test_override_settings_takes_effect_without_restart(settings):
    settings.INDEXNOW = VALID
    assert get_settings().max_urls == 10_000
    settings.INDEXNOW = {**VALID, "BATCH": {"MAX_URLS": 5}}
    assert get_settings().max_urls == 5


@pytest.mark.django_db
def test_base_url_from_the_sites_framework(settings):
    from django.contrib.sites.models import Site

    Site.objects.filter(pk=1).update(domain="News.Example.org")
    Site.objects.clear_cache()
    settings.INDEXNOW = {"KEY": VALID["KEY"]}
    assert check_settings() == []
    conf = get_settings()
    assert conf.base_url == "https://news.example.org"
    assert list(conf.hosts) == ["news.example.org"]


@pytest.mark.django_db
def test_sites_framework_without_a_site_is_a_config_error(settings):
    from django.contrib.sites.models import Site

    Site.objects.all().delete()
    Site.objects.clear_cache()
    settings.INDEXNOW = {"KEY": VALID["KEY"]}
    with pytest.raises(IndexNowConfigError, match="could not give the current domain"):
        get_settings()


@pytest.mark.parametrize("ttl", [0, -1, 3.5, "604800", True, None])
def test_failure_ttl_is_a_whole_number_of_seconds(settings, ttl):
    assert errors_for(settings, {**VALID, "QUEUE": {"FAILURE_TTL": ttl}}) == [
        checks.Error(
            f"INDEXNOW['QUEUE']['FAILURE_TTL'] must be a whole number of seconds >= 1, not {ttl!r}.",
            hint="It is how long rq keeps a failed job in its failed job registry; "
            "the default, 604800, is 7 days.",
            id="indexnow.E013",
        )
    ]


def test_failure_ttl_defaults_to_a_week_and_is_on_the_settings(settings):
    settings.INDEXNOW = VALID
    assert get_settings().queue_failure_ttl == 7 * 24 * 3600
    settings.INDEXNOW = {**VALID, "QUEUE": {"FAILURE_TTL": 3600}}
    assert get_settings().queue_failure_ttl == 3600
    assert get_settings().queue_timeout == 60


@pytest.mark.parametrize("ttl", [-1, 3.5, "0", True, None])
def test_result_ttl_is_a_whole_number_of_seconds(settings, ttl):
    assert errors_for(settings, {**VALID, "QUEUE": {"RESULT_TTL": ttl}}) == [
        checks.Error(
            f"INDEXNOW['QUEUE']['RESULT_TTL'] must be a whole number of seconds >= 0, not {ttl!r}.",
            hint="It is how long rq keeps a finished delivery job and its result; "
            "0, the default, removes it at once (the history is in the database).",
            id="indexnow.E013",
        )
    ]


NON_FINITE_HINT = "NaN and infinity are not allowed: give a finite number."


@pytest.mark.parametrize("value", [float("nan"), float("inf"), float("-inf")])
@pytest.mark.parametrize(
    ("name", "sub", "check_id"),
    [
        ("QUEUE", "DELAY", "indexnow.E013"),
        ("QUEUE", "TIMEOUT", "indexnow.E013"),
        ("QUEUE", "FAILURE_TTL", "indexnow.E013"),
        ("QUEUE", "RESULT_TTL", "indexnow.E013"),
        ("RETRY", "MAX_ATTEMPTS", "indexnow.E015"),
        ("RETRY", "BASE_DELAY", "indexnow.E015"),
        ("RETRY", "MULTIPLIER", "indexnow.E015"),
        ("RETRY", "MAX_DELAY", "indexnow.E015"),
        ("RETRY", "SERVER_ERROR_DELAY", "indexnow.E015"),
        ("DEBOUNCE", "TTL", "indexnow.E017"),
        ("HTTP", "TIMEOUT", "indexnow.E018"),
    ],
)
def test_nan_and_infinity_are_refused(settings, name, sub, check_id, value):
    [error] = errors_for(settings, {**VALID, name: {sub: value}})
    assert error.id == check_id
    assert error.msg.startswith(f"INDEXNOW[{name!r}][{sub!r}] must be a ")
    assert error.msg.endswith(f", not {value!r}.")
    assert error.hint == NON_FINITE_HINT
    with pytest.raises(IndexNowConfigError, match=check_id):
        get_settings()


@pytest.mark.parametrize("value", [float("nan"), float("inf")])
def test_nan_and_infinity_are_not_a_batch_size(settings, value):
    [error] = errors_for(settings, {**VALID, "BATCH": {"MAX_URLS": value}})
    assert error.id == "indexnow.E016"


@pytest.mark.parametrize("dispatch", ["sync", "queue"])
@pytest.mark.slow
def test_migrate_on_a_fresh_database_with_the_sites_framework_and_no_base_url(tmp_path, dispatch):
    """The checks that migrate runs never read the django_site table it is about to create."""
    (tmp_path / "fresh_settings.py").write_text(
        "from tests.settings import *  # noqa: F403\n"
        f"DATABASES = {{'default': {{'ENGINE': 'django.db.backends.sqlite3', "
        f"'NAME': {str(tmp_path / 'fresh.sqlite3')!r}}}}}\n"
        "INDEXNOW = {k: v for k, v in INDEXNOW.items() if k != 'BASE_URL'}  # noqa: F405\n"
        f"INDEXNOW['DISPATCH'] = {dispatch!r}\n"
    )

    def manage(*args):
        return run_django(*args, settings="fresh_settings", path=(tmp_path,))

    migrate = manage("migrate", "--noinput")
    assert migrate.returncode == 0, migrate.stderr
    assert "Applying sites.0001_initial... OK" in migrate.stdout
    # Once the table exists, the base URL comes from the Site (example.com).
    shell = manage(
        "shell",
        "-c",
        "from indexnow_django.conf import get_settings; print(get_settings().base_url)",
    )
    assert shell.returncode == 0, shell.stderr
    assert shell.stdout.splitlines()[-1] == "https://example.com"


def test_an_http_site_names_its_http_key_file_in_every_request(indexnow_settings, engine):
    from indexnow_django.sending.send import deliver_now

    indexnow_settings(BASE_URL="http://intranet.example.com", HOSTS=None)
    conf = get_settings()
    [host] = conf.hosts.values()
    assert host.key_file_url == "http://intranet.example.com/test-key-0123456789.txt"

    deliver_now(["/a/"])

    [post] = engine.posts
    assert post.json["keyLocation"] == "http://intranet.example.com/test-key-0123456789.txt"
    assert post.json["urlList"] == ["http://intranet.example.com/a/"]


def test_other_hosts_of_an_http_site_keep_https(indexnow_settings):
    indexnow_settings(
        BASE_URL="http://www.example.com", HOSTS=["www.example.com", "shop.example.com"]
    )
    hosts = get_settings().hosts
    assert hosts["www.example.com"].key_file_url == "http://www.example.com/test-key-0123456789.txt"
    assert hosts["shop.example.com"].key_file_url == (
        "https://shop.example.com/test-key-0123456789.txt"
    )
    assert hosts["shop.example.com"].key_location is None


# --------------------------------------------------------------------------- wiring


def test_the_app_without_its_middleware(settings):
    from indexnow_django.checks import check_wiring

    settings.INDEXNOW = VALID
    settings.MIDDLEWARE = ["django.middleware.common.CommonMiddleware"]
    assert check_wiring() == [
        checks.Warning(
            "indexnow_django.middleware.IndexNowMiddleware is not in MIDDLEWARE: the URLs of a "
            "request are flushed once per transaction (or per save outside one) instead of once "
            "per request.",
            hint="Add 'indexnow_django.middleware.IndexNowMiddleware' to MIDDLEWARE.",
            id="indexnow.W004",
        )
    ]
    settings.MIDDLEWARE = ["tests.testapp.middleware.OwnIndexNowMiddleware"]
    assert check_wiring() == []


def test_queue_dispatch_without_django_rq_installed(settings):
    from indexnow_django.checks import StopsDelivery, check_transport

    settings.INSTALLED_APPS = [app for app in settings.INSTALLED_APPS if app != "django_rq"]
    settings.INDEXNOW = {**VALID, "DISPATCH": "queue"}
    [message] = check_transport()
    assert isinstance(message, StopsDelivery) and message.level == checks.WARNING
    assert (message.id, message.msg, message.hint) == (
        "indexnow.W005",
        "INDEXNOW dispatches to queue 'default' but django_rq is not in INSTALLED_APPS: "
        "manage.py rqworker, which runs the jobs, is not available.",
        "Add 'django_rq' to INSTALLED_APPS.",
    )
    settings.INDEXNOW = {**VALID, "DISPATCH": "sync"}
    assert check_transport() == []


def test_a_dummy_debounce_cache_with_sync_dispatch(settings):
    from indexnow_django.checks import check_debounce_cache

    settings.CACHES = {
        **settings.CACHES,
        "none": {"BACKEND": "django.core.cache.backends.dummy.DummyCache"},
    }
    settings.INDEXNOW = {**VALID, "DISPATCH": "sync", "DEBOUNCE": {"CACHE": "none"}}
    assert check_debounce_cache() == [
        checks.Warning(
            "INDEXNOW['DEBOUNCE']['CACHE'] is 'none' (DummyCache), which stores nothing, so "
            "nothing is debounced: an engine receives a URL again at every save.",
            hint="Point DEBOUNCE['CACHE'] at a real cache, or set DEBOUNCE['TTL'] to 0.",
            id="indexnow.W006",
        )
    ]
    settings.INDEXNOW = {**VALID, "DISPATCH": "sync", "DEBOUNCE": {"CACHE": "none", "TTL": 0}}
    assert check_debounce_cache() == []
    # With queue dispatch W002 says it.
    settings.INDEXNOW = {**VALID, "DISPATCH": "queue", "DEBOUNCE": {"CACHE": "none"}}
    assert check_debounce_cache() == []


def test_the_middleware_without_the_app_says_so_and_steps_aside(settings, caplog):
    from django.core.exceptions import MiddlewareNotUsed
    from django.test import Client

    settings.INSTALLED_APPS = [
        app for app in settings.INSTALLED_APPS if app not in ("indexnow_django", "tests.testapp")
    ]
    settings.ROOT_URLCONF = "tests.testapp.bare_urls"
    from indexnow_django.middleware import IndexNowMiddleware

    with pytest.raises(MiddlewareNotUsed):
        IndexNowMiddleware(lambda request: None)
    [record] = [r for r in caplog.records if r.name == "indexnow_django.middleware"]
    assert record.levelname == "WARNING"
    assert record.getMessage() == (
        "indexnow_django.middleware.IndexNowMiddleware is in MIDDLEWARE but indexnow_django is "
        "not in INSTALLED_APPS: no model is tracked and nothing is submitted. Add "
        "'indexnow_django' to INSTALLED_APPS (after 'django_rq')."
    )
    # The site keeps answering.
    assert Client().get("/ping/").status_code == 200


def test_a_retry_delay_that_cannot_be_computed_is_refused(settings):
    assert errors_for(settings, {**VALID, "RETRY": {"MAX_ATTEMPTS": 2000, "MULTIPLIER": 2}}) == [
        checks.Error(
            "INDEXNOW['RETRY']['MULTIPLIER'] 2 to the power of MAX_ATTEMPTS - 1 (1999) is too "
            "large to compute a delay.",
            hint="Lower MULTIPLIER or MAX_ATTEMPTS: every delay is capped at MAX_DELAY anyway.",
            id="indexnow.E015",
        )
    ]
    assert errors_for(settings, {**VALID, "RETRY": {"MAX_ATTEMPTS": 1000, "MULTIPLIER": 2}}) == []


# The key file URL -------------------------------------------------------------


def key_file_warning(found: str) -> checks.Warning:
    return checks.Warning(
        f"The key file URL /test….txt does not reach indexnow_django's key file view: "
        f"{found}, so engines cannot verify the key and reject every submission.",
        hint='Add path("", include("indexnow_django.urls")) to your ROOT_URLCONF, before any '
        "catch-all pattern (outside i18n_patterns); or serve the file yourself and set "
        "KEY_LOCATION.",
        id="indexnow.W007",
    )


def test_the_key_file_url_resolves_with_the_include(settings):
    settings.INDEXNOW = VALID
    assert check_key_file_url() == []


def test_a_urlconf_without_the_include_is_a_warning(settings):
    settings.INDEXNOW = VALID
    settings.ROOT_URLCONF = "tests.urls_without_key_file"
    assert check_key_file_url() == [key_file_warning("no URL pattern matches it")]


def test_a_catch_all_before_the_include_is_a_warning(settings):
    settings.INDEXNOW = VALID
    settings.ROOT_URLCONF = "tests.urls_catch_all_first"
    assert check_key_file_url() == [
        key_file_warning("it is answered by tests.urls_catch_all_first.catch_all")
    ]


def test_a_key_location_elsewhere_needs_no_route(settings):
    settings.INDEXNOW = {**VALID, "KEY_LOCATION": "https://cdn.example.com/key.txt"}
    settings.ROOT_URLCONF = "tests.urls_without_key_file"
    assert check_key_file_url() == []


def test_each_per_host_key_is_resolved(settings):
    settings.INDEXNOW = {
        **VALID,
        "KEY_LOCATION": "https://cdn.example.com/key.txt",
        "HOSTS": {"www.example.com": {}, "shop.example.com": {"KEY": "shop-key-0123456789"}},
    }
    settings.ROOT_URLCONF = "tests.urls_without_key_file"
    [warning] = check_key_file_url()
    assert warning.msg.startswith("The key file URL /shop….txt does not reach")


@pytest.mark.django_db(databases="__all__")
def test_manage_py_check_shows_the_missing_include(settings):
    settings.INDEXNOW = VALID
    settings.ROOT_URLCONF = "tests.urls_without_key_file"
    ids = [m.id for m in checks.run_checks()]
    assert "indexnow.W007" in ids


PREVIOUS_HINT = (
    "List the keys being rotated out, e.g. ['<old key>']: their key files stay served "
    "while engines may still check submissions made with them."
)


def test_previous_keys_must_be_a_list_of_keys(settings):
    assert errors_for(settings, {**VALID, "PREVIOUS_KEYS": "old-key-12345678"}) == [
        checks.Error(
            "INDEXNOW['PREVIOUS_KEYS'] must be a list of keys, not str.",
            hint=PREVIOUS_HINT,
            id="indexnow.E021",
        )
    ]
    assert errors_for(settings, {**VALID, "PREVIOUS_KEYS": ["old-key-12345678", "short"]}) == [
        checks.Error(
            "INDEXNOW['PREVIOUS_KEYS'] holds *****, which is not 8 to 128 characters of "
            "A-Z, a-z, 0-9 and '-': it has 5 characters.",
            hint=PREVIOUS_HINT,
            id="indexnow.E021",
        )
    ]


def test_previous_keys_may_not_hold_the_current_key(settings):
    hosts = {"shop.example.com": {"KEY": "shop-key-1234567", "PREVIOUS_KEYS": ["shop-key-1234567"]}}
    value = {**VALID, "PREVIOUS_KEYS": ["test-key-0123456789"], "HOSTS": hosts}
    hint = (
        "A key is either current (KEY) or being rotated out (PREVIOUS_KEYS): remove it from "
        "PREVIOUS_KEYS."
    )
    assert errors_for(settings, value) == [
        checks.Error(
            "INDEXNOW['PREVIOUS_KEYS'] holds the current key test….",
            hint=hint,
            id="indexnow.E021",
        ),
        checks.Error(
            "INDEXNOW['HOSTS']['shop.example.com']['PREVIOUS_KEYS'] holds the current key shop….",
            hint=hint,
            id="indexnow.E021",
        ),
    ]


def test_previous_keys_top_level_and_per_host_are_valid(settings):
    hosts = {"shop.example.com": {"KEY": "shop-key-1234567", "PREVIOUS_KEYS": ["shop-old-7654321"]}}
    value = {**VALID, "PREVIOUS_KEYS": ["old-key-12345678"], "HOSTS": hosts}
    assert errors_for(settings, value) == []


def test_throttle_is_none_or_a_whole_number_of_requests(settings):
    assert errors_for(settings, {**VALID, "THROTTLE": {"MAX_REQUESTS_PER_MINUTE": None}}) == []
    assert errors_for(settings, {**VALID, "THROTTLE": {"MAX_REQUESTS_PER_MINUTE": 0.5}}) == [
        checks.Error(
            "INDEXNOW['THROTTLE']['MAX_REQUESTS_PER_MINUTE'] must be a whole number >= 1, not 0.5.",
            hint="None sends without a limit.",
            id="indexnow.E022",
        )
    ]
    assert errors_for(settings, {**VALID, "THROTTLE": {"PER_MINUTE": 5}})[0].id == "indexnow.E002"
