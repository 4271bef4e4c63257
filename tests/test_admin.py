"""The history in the Django admin, through Django's test client: permissions, the list,
its filters, search and chart, the detail, "Send again", "Submit URLs", and the mixin."""

from __future__ import annotations

import datetime
import re
import time
from datetime import timedelta

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client
from django.utils import timezone
from django.utils.formats import date_format

from indexnow_django.models import Delivery
from indexnow_django.protocol.client import endpoint_name
from indexnow_django.sending.send import deliver_now
from indexnow_django.testing import Reply
from indexnow_django.transports.rq.queue import META_BATCH_ID
from indexnow_django.units.dispatch import dispatch
from tests.conftest import make_delivery
from tests.needs import AT_ONCE, ONE_JOB
from tests.rqhelpers import failed_ids, only_queued_job, wait_for_status
from tests.testapp.models import Post

pytestmark = pytest.mark.django_db

LIST = "/admin/indexnow/delivery/"
SUBMIT = "/admin/indexnow/delivery/submit/"
A = "https://www.example.com/a/"
B = "https://www.example.com/b/"
#: On the tests of a site that sends from the web process (``DISPATCH: "sync"``).
IN_PROCESS = pytest.mark.indexnow(**AT_ONCE)


def staff(client: Client, *perms: str, name: str = "editor") -> User:
    """Log ``client`` in as a staff user holding exactly ``perms`` (``app_label.codename``)."""
    user = User.objects.create_user(name, password="pw", is_staff=True)
    for perm in perms:
        app_label, codename = perm.split(".")
        user.user_permissions.add(
            Permission.objects.get(content_type__app_label=app_label, codename=codename)
        )
    client.force_login(user)
    return user


def listed(response) -> list[int]:
    """The primary keys of the records in a list page, in the order shown."""
    html = response.content.decode()
    return [int(pk) for pk in re.findall(r'href="/admin/indexnow/delivery/(\d+)/change/', html)]


# --------------------------------------------------------------------------- permissions


def test_anonymous_visitors_are_sent_to_the_login_page(client):
    for url in (LIST, SUBMIT):
        response = client.get(url)
        assert response.status_code == 302
        assert response["Location"].startswith("/admin/login/")


def test_staff_without_the_apps_permissions_see_nothing(client):
    record = make_delivery()
    staff(client)
    assert client.get(LIST).status_code == 403
    assert client.get(f"{LIST}{record.pk}/change/").status_code == 403
    assert client.get(SUBMIT).status_code == 403
    assert "IndexNow" not in client.get("/admin/").content.decode()


def test_viewers_see_the_list_and_detail_but_neither_action_nor_submit_page(client, engine):
    record = make_delivery(urls=A)
    staff(client, "indexnow.view_delivery")
    page = client.get(LIST)
    assert page.status_code == 200
    html = page.content.decode()
    assert 'value="send_again"' not in html
    assert SUBMIT not in html
    assert client.get(f"{LIST}{record.pk}/change/").status_code == 200
    assert client.get(SUBMIT).status_code == 403
    # The action cannot be forced by posting it.
    client.post(LIST, {"action": "send_again", "_selected_action": [record.pk]})
    assert engine.posts == []


def test_records_are_read_only(client):
    record = make_delivery()
    staff(client, "indexnow.view_delivery", "indexnow.change_delivery", "indexnow.add_delivery")
    assert client.get(f"{LIST}add/").status_code == 403
    client.post(f"{LIST}{record.pk}/change/", {"engine": "changed"})
    record.refresh_from_db()
    assert record.engine == "indexnow"


# --------------------------------------------------------------------------- list


def test_the_list_shows_real_deliveries_newest_first(client, engine, history_on):
    engine.queue_replies(Reply(200), Reply(422, body="Unprocessable: wrong host"))
    deliver_now(["/first/"], batch_id="batchone")
    deliver_now(["/second/"], batch_id="batchtwo")
    older = make_delivery(age_days=2)
    first, second = Delivery.objects.filter(batch_id__startswith="batch").order_by("pk")
    staff(client, "indexnow.view_delivery")
    page = client.get(LIST)
    assert listed(page) == [second.pk, first.pk, older.pk]
    html = page.content.decode()
    assert "batchtwo" in html and "rejected" in html and "422" in html


def test_the_list_shows_a_retrys_status_and_attempt_with_its_outcome(client, settings):
    settings.TIME_ZONE = "UTC"
    record = make_delivery(outcome="retry", status=503, attempt=2)
    staff(client, "indexnow.view_delivery")
    html = client.get(LIST).content.decode()
    assert "retry</span> <span>503, attempt 2</span>" in html
    when = record.sent_at.astimezone(datetime.timezone.utc)
    assert f'<time datetime="{when.isoformat()}"' in html
    assert f">{date_format(when, 'DATETIME_FORMAT')}</time>" in html


@pytest.mark.parametrize(
    ("query", "expected"),
    [
        ("outcome__exact=rejected", ["rejected"]),
        ("engine=bing", ["bing"]),
        ("host=blog.example.com", ["blog"]),
    ],
)
def test_filters(client, query, expected):
    make_delivery(engine="indexnow", host="www.example.com", outcome="accepted", batch_id="www")
    make_delivery(engine="bing", outcome="accepted", batch_id="bing")
    make_delivery(host="blog.example.com", urls="https://blog.example.com/x/", batch_id="blog")
    make_delivery(outcome="rejected", status=403, batch_id="rejected")
    staff(client, "indexnow.view_delivery")
    page = client.get(f"{LIST}?{query}")
    assert page.status_code == 200
    shown = Delivery.objects.filter(pk__in=listed(page)).values_list("batch_id", flat=True)
    assert sorted(shown) == expected


def test_the_date_filter(client):
    make_delivery(age_days=10, batch_id="old")
    make_delivery(age_days=0, batch_id="today")
    staff(client, "indexnow.view_delivery")
    html = client.get(LIST).content.decode()
    [link] = re.findall(r'<a href="(\?sent_at__gte=[^"]+)">Past 7 days</a>', html)
    page = client.get(LIST + link.replace("&amp;", "&"))
    shown = Delivery.objects.filter(pk__in=listed(page)).values_list("batch_id", flat=True)
    assert list(shown) == ["today"]


def test_search_by_full_url_part_of_one_and_batch_id(client):
    one = make_delivery(urls=f"{A}\nhttps://www.example.com/blog/hello-world/", batch_id="1a2b3c")
    two = make_delivery(urls=B, batch_id="4d5e6f")
    staff(client, "indexnow.view_delivery")
    assert listed(client.get(LIST, {"q": "https://www.example.com/blog/hello-world/"})) == [one.pk]
    assert listed(client.get(LIST, {"q": "hello-wor"})) == [one.pk]
    assert sorted(listed(client.get(LIST, {"q": "www.example.com/"}))) == [one.pk, two.pk]
    assert listed(client.get(LIST, {"q": "4d5e6f"})) == [two.pk]
    assert listed(client.get(LIST, {"q": "4d5e"})) == []  # a batch id matches whole
    assert listed(client.get(LIST, {"q": "/nowhere/"})) == []


def test_the_chart_shows_urls_per_day_by_outcome_over_the_retention_window(client, settings):
    settings.INDEXNOW = {**settings.INDEXNOW, "HISTORY": {"RETENTION_DAYS": 7}}
    make_delivery(age_days=0, urls=f"{A}\n{B}")
    make_delivery(age_days=0, outcome="rejected", status=422, urls=A)
    make_delivery(age_days=3, outcome="retry", status=503, urls=A)
    make_delivery(age_days=30)  # outside the window
    staff(client, "indexnow.view_delivery")
    html = client.get(LIST).content.decode()
    svg = html[html.index('<figure id="indexnow-chart"') : html.index("</figure>")]
    assert "<svg" in svg and "URLs per day by outcome, last 8 days" in svg
    days = re.findall(r'data-day="([\d-]+)" data-total="(\d+)"', svg)
    today = timezone.localdate()
    assert [day for day, _ in days] == [
        (today - timedelta(days=n)).isoformat() for n in range(7, -1, -1)
    ]
    totals = dict(days)
    assert totals[today.isoformat()] == "3"
    assert totals[(today - timedelta(days=3)).isoformat()] == "1"
    assert sum(int(total) for total in totals.values()) == 4
    # A day's tooltip shows it as the admin shows dates (DATE_FORMAT).
    assert f"{date_format(today, 'DATE_FORMAT')}: 2 accepted, 1 rejected" in svg
    assert f"{date_format(today - timedelta(days=3), 'DATE_FORMAT')}: 1 retry" in svg
    assert "accepted: 2" in svg and "rejected: 1" in svg and "retry: 1" in svg


def test_the_chart_follows_the_filters(client):
    make_delivery(engine="bing", urls=f"{A}\n{B}")
    make_delivery(engine="yandex", urls=A)
    staff(client, "indexnow.view_delivery")
    html = client.get(LIST, {"engine": "yandex"}).content.decode()
    assert f'data-day="{timezone.localdate().isoformat()}" data-total="1"' in html


# --------------------------------------------------------------------------- detail


def test_the_detail_shows_the_urls_and_the_answer(client, engine, history_on):
    engine.queue_replies(Reply(403, body="UserForbiddedToAccessSite"))
    deliver_now(["/a/", "/b/"], batch_id="detail")
    record = Delivery.objects.get()
    staff(client, "indexnow.view_delivery")
    html = client.get(f"{LIST}{record.pk}/change/").content.decode()
    assert f"<li>{A}</li><li>{B}</li>" in html
    assert "UserForbiddedToAccessSite" in html
    assert "403" in html and "detail" in html
    assert "sent from the process that flushed" in html


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_rejected_job_links_to_the_failed_job_in_django_rq(
    client, engine, indexnow_settings, history_on, start_worker, redis_conn
):
    overrides = {**history_on, **ONE_JOB}
    indexnow_settings(**overrides)
    engine.queue_replies(Reply(422, body="Unprocessable Entity"))
    dispatch(["/a/"])
    job = only_queued_job(redis_conn)
    start_worker(overrides)
    wait_for_status(redis_conn, [job.id], ["failed"])
    assert failed_ids(redis_conn) == [job.id]

    record = Delivery.objects.get(batch_id=job.meta[META_BATCH_ID])
    assert (record.job_id, record.queue, record.outcome) == (job.id, "default", "rejected")
    staff(client, "indexnow.view_delivery")
    html = client.get(f"{LIST}{record.pk}/change/").content.decode()
    link = f"/admin/django_rq/dashboard/queues/0/{job.id}/"
    assert f'href="{link}"' in html
    assert "failed job registry" in html
    # The link leads to django-rq's page of that job, for those who may see it.
    client.force_login(User.objects.create_superuser("root", password="pw"))
    page = client.get(link)
    assert page.status_code == 200
    assert job.id in page.content.decode()


# --------------------------------------------------------------------------- Send again


@IN_PROCESS
def test_send_again_posts_the_selected_urls_again_ignoring_the_debounce_store(
    client, engine, history_on
):
    deliver_now(["/a/", "/b/"])
    deliver_now(["/c/"])
    assert deliver_now(["/a/"]).debounced_count == 1  # accepted: debounced now
    first, second = Delivery.objects.order_by("pk")
    engine.reset()
    staff(client, "indexnow.view_delivery", "indexnow.send_again")
    response = client.post(
        LIST, {"action": "send_again", "_selected_action": [first.pk, second.pk]}, follow=True
    )
    assert sorted(engine.posted_urls()) == [A, B, "https://www.example.com/c/"]
    assert "3 URLs of 2 record(s) sent from the web process" in response.content.decode()
    assert Delivery.objects.count() == 3  # the new POST is recorded too


def test_send_again_through_the_queue_makes_one_job(
    client, engine, history_on, indexnow_settings, redis_conn
):
    record = make_delivery(urls=f"{A}\n{B}")
    indexnow_settings(DISPATCH="queue")
    staff(client, "indexnow.view_delivery", "indexnow.send_again")
    response = client.post(
        LIST, {"action": "send_again", "_selected_action": [record.pk]}, follow=True
    )
    job = only_queued_job(redis_conn)
    assert job.args == ([A, B],)
    assert job.kwargs["force"] is True
    assert "2 URLs of 1 record(s) queued for delivery" in response.content.decode()


# --------------------------------------------------------------------------- Submit URLs


@IN_PROCESS
def test_the_submit_page_sends_valid_lines_and_reports_invalid_ones_by_number(client, engine):
    staff(client, "indexnow.submit_urls")
    text = "\n".join(
        [
            "/a/",
            "# a comment",
            "",
            "https://www.example.com/b/",
            "ftp://www.example.com/x",
            "https://elsewhere.example.org/y/",
            "/a/",
        ]
    )
    response = client.post(SUBMIT, {"urls": text, "force": "on"}, follow=True)
    assert response.status_code == 200
    assert engine.posted_urls() == [A, B]
    html = response.content.decode()
    assert "2 URLs sent from the web process." in html
    assert "2 lines were skipped" in html
    assert "line 5: ftp://www.example.com/x:" in html
    assert "line 6: https://elsewhere.example.org/y/:" in html
    assert "elsewhere.example.org" in html
    # Only the lines to correct stay in the box.
    box = re.search(r"<textarea[^>]*>(.*?)</textarea>", html, re.S).group(1)
    assert box.strip() == "ftp://www.example.com/x\nhttps://elsewhere.example.org/y/"


@IN_PROCESS
def test_an_editor_pasting_a_foreign_or_broken_url_is_told_why_in_plain_words(client, engine):
    staff(client, "indexnow.view_delivery", "indexnow.submit_urls")
    text = "/a/\nhttps://elsewhere.example.org/y/\nhttps://[www.example.com]/z/\nhttp://[::1/"

    response = client.post(SUBMIT, {"urls": text, "force": "on"}, follow=True)

    assert response.status_code == 200
    assert engine.posted_urls() == [A]
    html = response.content.decode()
    assert "3 lines were skipped" in html
    assert (
        "line 2: https://elsewhere.example.org/y/: elsewhere.example.org is not a host of this "
        "site (www.example.com)"
    ) in html
    assert "line 3: https://[www.example.com]/z/: not a URL" in html
    assert "line 4: http://[::1/: not a URL" in html
    for jargon in ("INDEXNOW", "HOSTS", "BASE_URL", "unpack"):
        assert jargon not in html, jargon


def test_the_submit_page_with_nothing_valid_sends_nothing(client, engine):
    staff(client, "indexnow.submit_urls")
    html = client.post(SUBMIT, {"urls": "not a url"}).content.decode()
    assert "No URL to submit." in html
    assert "line 1: not a url:" in html
    assert engine.posts == []


@IN_PROCESS
def test_the_submit_page_honours_the_debounce_store_unless_told(client, engine):
    staff(client, "indexnow.submit_urls")
    deliver_now(["/a/"])
    engine.reset()
    client.post(SUBMIT, {"urls": "/a/"})
    assert engine.posts == []
    client.post(SUBMIT, {"urls": "/a/", "force": "on"})
    assert engine.posted_urls() == [A]


def test_the_list_links_to_the_submit_page_for_those_allowed(client):
    staff(client, "indexnow.view_delivery", "indexnow.submit_urls")
    assert f'href="{SUBMIT}"' in client.get(LIST).content.decode()
    assert client.get(SUBMIT).status_code == 200


# --------------------------------------------------------------------------- the mixin


def published_post() -> Post:
    return Post.objects.create(title="Hello", slug="hello", status=Post.PUBLISHED)


def test_the_change_page_shows_when_the_urls_were_last_accepted_and_by_whom(client):
    post = published_post()
    url = "https://www.example.com/posts/hello/"
    make_delivery(age_days=1, engine="bing", urls=url)
    make_delivery(age_days=2, engine="yandex", urls=f"{A}\n{url}")
    make_delivery(age_days=0, engine="naver", urls=url, outcome="rejected")
    staff(client, "testapp.change_post", "indexnow.view_delivery", "indexnow.submit_urls")
    html = client.get(f"/admin/testapp/post/{post.pk}/change/").content.decode()
    status = html[html.index('id="indexnow-status"') :]
    status = status[: status.index("</div>")]
    assert "last accepted" in status
    assert status.index("bing") < status.index("yandex")
    assert "naver" not in status
    assert 'id="indexnow-submit-now"' in html
    # The page is still the model's change form.
    assert 'id="post_form"' in html


def test_a_post_never_accepted_says_so(client):
    post = published_post()
    staff(client, "testapp.change_post", "indexnow.view_delivery")
    html = client.get(f"/admin/testapp/post/{post.pk}/change/").content.decode()
    assert "not accepted by any engine in the last 14 days" in html
    assert 'id="indexnow-submit-now"' not in html  # no submit_urls permission


@IN_PROCESS
def test_submit_now_sends_the_objects_urls_ignoring_the_debounce_store(client, engine):
    post = published_post()
    engine.reset()
    staff(client, "testapp.change_post", "indexnow.submit_urls")
    response = client.post(f"/admin/testapp/post/{post.pk}/indexnow-submit/", follow=True)
    assert engine.posted_urls() == ["https://www.example.com/posts/hello/"]
    assert "1 URL sent from the web process." in response.content.decode()
    client.post(f"/admin/testapp/post/{post.pk}/indexnow-submit/")
    assert len(engine.posts) == 2


def test_submit_now_needs_its_permission_and_a_public_object(client, engine):
    post = published_post()
    draft = Post.objects.create(title="Draft", slug="draft")
    engine.reset()
    staff(client, "testapp.change_post")
    assert client.post(f"/admin/testapp/post/{post.pk}/indexnow-submit/").status_code == 403
    client.logout()
    staff(client, "testapp.change_post", "indexnow.submit_urls", name="other")
    response = client.post(f"/admin/testapp/post/{draft.pk}/indexnow-submit/", follow=True)
    assert "not public" in response.content.decode()
    assert engine.posts == []


# --------------------------------------------------------------------------- papercuts


def test_the_record_shows_its_urls_first_and_the_time_as_the_list_does(client, settings):
    settings.TIME_ZONE = "UTC"
    sent = datetime.datetime(2026, 12, 4, 17, 5, 9, tzinfo=datetime.timezone.utc)
    record = make_delivery(sent_at=sent, urls=f"{A}\n{B}", status=200)
    staff(client, "indexnow.view_delivery")

    html = client.get(f"{LIST}{record.pk}/change/").content.decode()

    fields = re.findall(r'class="form-row[^"]*field-([a-z_]+)', html)
    assert fields[0] == "url_list_html", fields
    assert ">Dec. 4, 2026, 5:05 p.m.</time>" in html
    listed_html = client.get(LIST).content.decode()
    assert (
        '<time datetime="2026-12-04T17:05:09+00:00">Dec. 4, 2026, 5:05 p.m.</time>' in listed_html
    )


def test_every_page_shows_a_moment_in_the_admins_own_localized_format(client, settings, engine):
    """The list, the record, the trouble notice above the list and an object's panel: one
    format, Django's DATETIME_FORMAT for the active language, as the rest of the admin."""
    settings.TIME_ZONE = "UTC"
    sent = datetime.datetime(2026, 12, 4, 17, 5, 9, tzinfo=datetime.timezone.utc)
    post = published_post()
    url = "https://www.example.com/posts/hello/"
    name = endpoint_name(engine.url)
    accepted = make_delivery(sent_at=sent, urls=url, engine=name)
    for n in range(5):  # a run of failures since that moment: the notice above the list
        make_delivery(
            sent_at=sent + datetime.timedelta(seconds=n),
            outcome="retry",
            status=429,
            engine=name,
        )
    staff(client, "indexnow.view_delivery", "testapp.change_post")
    shown = "Dec. 4, 2026, 5:05 p.m."
    pages = {
        "list": client.get(LIST).content.decode(),
        "record": client.get(f"{LIST}{accepted.pk}/change/").content.decode(),
        "panel": client.get(f"/admin/testapp/post/{post.pk}/change/").content.decode(),
    }
    notice = re.search(r'<div id="indexnow-trouble".*?</div>', pages["list"], re.S)
    assert notice is not None and f"since {shown}" in notice.group(), pages["list"]
    assert f"last accepted {shown}" in " ".join(notice.group().split())
    assert f"{name}, {shown}" in pages["panel"]
    for name, html in pages.items():
        assert shown in html, name
        assert not re.search(r"\b2026-12-04 17:05|Dec 4, 17:05:09|17:05:09<", html), name


def test_the_record_has_no_empty_history_tool(client):
    record = make_delivery()
    staff(client, "indexnow.view_delivery")

    html = client.get(f"{LIST}{record.pk}/change/").content.decode()

    assert "historylink" not in html and f"{record.pk}/history/" not in html
    response = client.get(f"{LIST}{record.pk}/history/")
    assert response.status_code == 302
    assert response["Location"] == f"{LIST}{record.pk}/change/"


def test_the_list_shows_each_rows_first_url(client):
    make_delivery(urls=f"{A}\n{B}")
    long = "https://www.example.com/" + "x" * 100 + "/"
    make_delivery(urls=long, age_days=1)
    staff(client, "indexnow.view_delivery")

    html = client.get(LIST).content.decode()

    cells = re.findall(
        r'<td class="field-first_url"><span title="([^"]+)"[^>]*>([^<]+)</span>(.*?)</td>', html
    )
    assert cells == [(A, A, " <small>(+1)</small>"), (long, long, "")]


def test_the_submit_page_speaks_to_editors(client, indexnow_settings):
    indexnow_settings(DEBOUNCE={"CACHE": "shared", "TTL": 600})
    staff(client, "indexnow.view_delivery", "indexnow.submit_urls")

    html = client.get(SUBMIT).content.decode()

    assert "/about/ is https://www.example.com/about/" in html
    assert "Send even pages sent recently" in html
    assert "is not sent to it again for 10 minutes" in html
    for jargon in ("BASE_URL", "DEBOUNCE", "debounce store"):
        assert jargon not in html, jargon


@pytest.mark.worker
@pytest.mark.django_db(transaction=True)
def test_a_post_sent_by_a_db_worker_task_names_the_task_and_links_to_it(
    client, engine, indexnow_settings, history_on, start_db_worker
):
    from django_tasks_db.models import DBTaskResult

    overrides = {
        **history_on,
        "DISPATCH": "tasks",
        "TASKS": {"BACKEND": "database", "QUEUE_NAME": "default"},
        "DEBOUNCE": {"CACHE": "shared", "TTL": 600},
    }
    indexnow_settings(**overrides)
    dispatch(["/a/"])
    [task] = DBTaskResult.objects.all()
    start_db_worker(overrides)
    engine.wait_for_posts(1, timeout=30)
    deadline = time.monotonic() + 30
    while not Delivery.objects.exists():
        assert time.monotonic() < deadline, "no delivery recorded"
        time.sleep(0.05)

    record = Delivery.objects.get()
    assert record.job_id == str(task.id)
    client.force_login(User.objects.create_superuser("root", password="pw"))
    html = client.get(f"{LIST}{record.pk}/change/").content.decode()
    link = f"/admin/django_tasks_database/dbtaskresult/{task.id}/change/"
    assert f'task <a href="{link}">{task.id}</a>' in html
    assert "sent from the process that flushed" not in html
    assert client.get(link).status_code == 200
