"""The history of POSTs in the admin (:class:`DeliveryAdmin`, the admin of
:class:`~indexnow_django.models.Delivery`): the list with its filters, URL search and
chart, a read-only record, "Send again". Its two other pages, "Submit URLs"
(:mod:`.submit`) and the freshness report (:mod:`.report`), come from the classes it
is built on.

Seeing records needs ``indexnow.view_delivery``, "Send again" ``indexnow.send_again``.
"""

from __future__ import annotations

from datetime import datetime
from typing import Any

from django.contrib import admin, messages
from django.db.models import QuerySet
from django.db.models.functions import Substr
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.response import TemplateResponse
from django.urls import reverse
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.timezone import localtime
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from ..compat import admin_markup
from ..manual.runs import send_urls
from ..models import Delivery
from ..ops.health import trouble
from .charts import chart, urls_per_day
from .common import OUTCOME_COLOURS, how_sent, settings_or_none
from .report import ReportPage
from .submit import SubmitURLsPage

__all__ = ["DeliveryAdmin"]

#: A moment on every page of the app (the list, a record, the notice above the list, an
#: object's panel): the admin's own, localized for the active language.
SENT_FORMAT = "DATETIME_FORMAT"
#: Characters of a record's URL text the list reads for its first URL.
FIRST_URL_READ = 2000
#: A cell of the list at most that many ems wide, clipped with an ellipsis.
_CLIPPED = (
    "display:inline-block;max-width:%dem;overflow:hidden;text-overflow:ellipsis;"
    "white-space:nowrap;vertical-align:bottom"
)


class DeliveryAdmin(SubmitURLsPage, ReportPage):
    """Registered by :mod:`indexnow_django.admin`."""

    #: Narrow enough for a 1400 px window with the admin's sidebar and the filters: the
    #: status code and the attempt ride with the outcome, the duration is on the detail page.
    #: The first URL (its host, and how many more the POST carried) tells what a row is
    #: about; the host and the count are filters and fields of the record.
    list_display = ["sent", "outcome_badge", "engine_name", "first_url", "batch_id"]
    list_display_links = ["sent"]
    list_filter = ["outcome", "engine", "host", "sent_at"]
    #: A batch id matches exactly; a URL or any part of one matches anywhere in a
    #: record's URLs: a scan of the URL texts of the retention window. Case-sensitive
    #: on PostgreSQL (URL paths are), a plain LIKE being several times faster there
    #: than a case-insensitive one; SQLite's LIKE ignores ASCII case.
    search_fields = ["=batch_id", "urls__contains"]
    search_help_text = _("A URL or part of one, or a batch id.")

    def get_search_results(
        self, request: HttpRequest, queryset: QuerySet[Delivery], search_term: str
    ) -> tuple[QuerySet[Delivery], bool]:
        """A whole URL (``http(s)://…``, one word) on PostgreSQL: the records that carry
        exactly it, found through the index of the history's URLs rather than by reading
        every URL text. Anything else, and other databases: the search above."""
        from ..sending.history import has_url_index, with_urls

        term = search_term.strip()
        if (
            term.startswith(("http://", "https://"))
            and not any(space in term for space in " \t\n")
            and has_url_index(queryset.db)
        ):
            return with_urls(queryset, [term]), False
        return super().get_search_results(request, queryset, search_term)

    ordering = ["-sent_at", "-pk"]
    actions = ["send_again"]
    list_per_page = 50
    show_full_result_count = False
    change_list_template = "admin/indexnow/delivery/change_list.html"
    #: The URLs first: they are what a record is opened for.
    fieldsets = [
        (None, {"fields": ["url_list_html"]}),
        (
            _("The POST"),
            {
                "fields": [
                    "sent_at_html",
                    "outcome",
                    "engine",
                    "host",
                    "status",
                    "answer",
                    "duration",
                    "batch_id",
                    "attempt",
                    "job",
                    "url_count",
                ]
            },
        ),
    ]

    # -- permissions: a read-only record, sent again or deleted by those allowed to

    def get_fieldsets(self, request: HttpRequest, obj: Delivery | None = None) -> Any:
        conf = settings_or_none()
        if conf is None or not conf.crawl_enabled:
            return self.fieldsets
        return [*self.fieldsets, (_("Crawled"), {"fields": ["crawled"]})]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Delivery | None = None) -> bool:
        return False

    def has_send_again_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("indexnow.send_again")

    # -- list

    def get_queryset(self, request: HttpRequest) -> QuerySet[Delivery]:
        # The list never loads URL texts (up to 10,000 URLs a row); the detail
        # page loads them when it shows them; the list shows the first, read from the
        # start of the text.
        queryset: QuerySet[Delivery] = (
            super()
            .get_queryset(request)
            .defer("urls")
            .annotate(indexnow_head=Substr("urls", 1, FIRST_URL_READ))
        )
        return queryset

    def get_readonly_fields(self, request: HttpRequest, obj: Delivery | None = None) -> list[str]:
        return [
            *(f.name for f in Delivery._meta.fields),
            "job",
            "url_list_html",
            "sent_at_html",
            "crawled",
        ]

    @admin.display(description=_("crawlers' fetches"))
    def crawled(self, obj: Delivery) -> str:
        """The verified crawlers' first fetches of its URLs after the acceptance (see
        :mod:`indexnow_django.crawl`)."""
        from ..crawl.display import delivery_html

        return delivery_html(obj.batch_id, obj.outcome, obj.url_list)

    @admin.display(description=_("sent at"), ordering="sent_at")
    def sent(self, obj: Delivery) -> str:
        """When, as the admin shows any moment (:data:`SENT_FORMAT`); to the second in the
        ``<time>`` element's ``datetime``."""
        return _moment(obj.sent_at)

    @admin.display(description=_("sent at"))
    def sent_at_html(self, obj: Delivery) -> str:
        """The same as in the list."""
        return _moment(obj.sent_at)

    @admin.display(description=_("engine"), ordering="engine")
    def engine_name(self, obj: Delivery) -> str:
        return format_html('<span title="{0}" style="{1}">{0}</span>', obj.engine, _CLIPPED % 9)

    @admin.display(description=_("first URL"))
    def first_url(self, obj: Delivery) -> str:
        """The first URL of the record (clipped, whole in its tooltip), and how many more
        it carries."""
        head = getattr(obj, "indexnow_head", None)
        if head is None:
            return ""
        first = head.split(Delivery.URL_SEPARATOR, 1)[0]
        more = obj.url_count - 1
        return format_html(
            '<span title="{0}" style="{1}">{0}</span>{2}',
            first,
            _CLIPPED % 16,
            format_html(" <small>(+{})</small>", more) if more > 0 else "",
        )

    @admin.display(description=_("outcome"), ordering="outcome")
    def outcome_badge(self, obj: Delivery) -> str:
        colour = OUTCOME_COLOURS.get(obj.outcome, "#666")
        details = [str(obj.status)] if obj.status else []
        if obj.attempt > 1:
            details.append(str(_("attempt %(number)d") % {"number": obj.attempt}))
        return format_html(
            '<span style="color:{};font-weight:bold">{}</span>{}',
            colour,
            obj.get_outcome_display(),
            format_html(" <span>{}</span>", ", ".join(details)) if details else "",
        )

    @admin.display(description=_("URL list"))
    def url_list_html(self, obj: Delivery) -> str:
        return format_html(
            '<ol class="indexnow-urls" style="max-height:30em;overflow:auto;margin:0;'
            'padding-left:3.5em">{}</ol>',
            format_html_join("", "<li>{}</li>", ((url,) for url in obj.url_list)),
        )

    @admin.display(description=_("job or task"))
    def job(self, obj: Delivery) -> str:
        from ..transports import job_html

        if not obj.job_id:
            return str(_("none: sent from the process that flushed (synchronous or fallback)"))
        return job_html(obj.queue, obj.job_id)

    def history_view(
        self, request: HttpRequest, object_id: str, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        """A record is never changed: no change log to show, the record itself instead."""
        return HttpResponseRedirect(
            reverse(f"{self.admin_site.name}:indexnow_delivery_change", args=[object_id])
        )

    def changelist_view(
        self, request: HttpRequest, extra_context: dict[str, Any] | None = None
    ) -> HttpResponse:
        response = super().changelist_view(request, extra_context)
        context = getattr(response, "context_data", None)
        if isinstance(response, TemplateResponse) and context and "cl" in context:
            conf = settings_or_none()
            days = conf.history_retention_days if conf else 14
            queryset = context["cl"].queryset
            context["indexnow_chart"] = chart(urls_per_day(queryset, days))
            context["indexnow_can_submit"] = self.has_submit_permission(request)
            context["indexnow_history_enabled"] = conf.history_enabled if conf else True
            context["indexnow_admin"] = admin_markup()
            context["indexnow_trouble"] = trouble(conf) if conf and conf.history_enabled else []
        return response

    # -- actions

    @admin.action(description=_("Send again"), permissions=["send_again"])
    def send_again(
        self, request: HttpRequest, queryset: QuerySet[Delivery]
    ) -> HttpResponseRedirect | None:
        conf = settings_or_none()
        if conf is None:
            self.message_user(request, _("INDEXNOW settings are invalid."), messages.ERROR)
            return None
        records = queryset.count()
        response = HttpResponseRedirect(request.get_full_path())
        texts = queryset.order_by().values_list("urls", flat=True).iterator(chunk_size=100)
        count = send_urls(
            (url for text in texts for url in text.split(Delivery.URL_SEPARATOR)),
            conf=conf,
            response=response,
        )
        self.message_user(
            request,
            ngettext(
                "%(count)d URL of %(records)d record(s) %(how)s, ignoring the debounce store.",
                "%(count)d URLs of %(records)d record(s) %(how)s, ignoring the debounce store.",
                count,
            )
            % {"count": count, "records": records, "how": how_sent(conf)},
            messages.SUCCESS,
        )
        return response


def _moment(when: datetime) -> str:
    local = localtime(when)
    return format_html(
        '<time datetime="{}">{}</time>', local.isoformat(), date_format(local, SENT_FORMAT)
    )
