"""IndexNow in the Django admin: the history of POSTs, "Send again", "Submit URLs", and
:class:`IndexNowAdminMixin` for the admin of a registered model.

Everything here is for staff with the app's permissions: seeing deliveries
needs ``indexnow.view_delivery``, the "Send again" action
``indexnow.send_again``, the "Submit URLs" page and the "Submit now" button
``indexnow.submit_urls``. Sending goes through the normal pipeline
(:func:`indexnow_django.units.dispatch.dispatch`, ignoring the debounce store), so
the settings decide whether a job is queued or the URLs are sent after the
response.
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from datetime import date, datetime
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.db.models import QuerySet
from django.db.models.functions import Substr
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import select_template
from django.template.response import TemplateResponse
from django.urls import URLPattern, path, reverse
from django.utils.formats import date_format
from django.utils.html import format_html, format_html_join
from django.utils.timezone import localtime
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from .compat import admin_markup
from .conf import IndexNowSettings, get_settings
from .manual.entries import read_pasted
from .manual.runs import send_urls
from .models import Delivery
from .ops.health import trouble
from .ops.report import freshness

if TYPE_CHECKING:
    from django.db.models import Model

    _ModelAdmin = admin.ModelAdmin[Delivery]
else:  # ModelAdmin is generic only to type checkers
    _ModelAdmin = admin.ModelAdmin

logger = logging.getLogger(__name__)

__all__ = [
    "DeliveryAdmin",
    "IndexNowAdminMixin",
    "SubmitURLsForm",
    "chart",
    "send_urls",
]

#: Bar colours of the chart, bottom to top.
OUTCOME_COLOURS = {
    "accepted": "#3b8a3e",
    "dry_run": "#8c8c8c",
    "retry": "#d89c1a",
    "rejected": "#c0392b",
    "skipped": "#5b6bb5",
}

#: A moment on every page of the app (the list, a record, the notice above the list, an
#: object's panel): the admin's own, localized for the active language.
SENT_FORMAT = "DATETIME_FORMAT"
#: A day (the chart's tooltips), and under the chart's bars.
DAY_FORMAT = "DATE_FORMAT"
DAY_LABEL_FORMAT = "MONTH_DAY_FORMAT"
#: Characters of a record's URL text the list reads for its first URL.
FIRST_URL_READ = 2000
#: A cell of the list at most that many ems wide, clipped with an ellipsis.
_CLIPPED = (
    "display:inline-block;max-width:%dem;overflow:hidden;text-overflow:ellipsis;"
    "white-space:nowrap;vertical-align:bottom"
)


def _how_sent(conf: IndexNowSettings) -> str:
    from .transports import chosen

    return chosen(conf).how_sent


# --------------------------------------------------------------------------- the chart


def chart(series: Sequence[tuple[date, dict[str, int]]]) -> dict[str, Any]:
    """The geometry of a stacked bar chart of URLs per day and outcome (an SVG in the page)."""
    width, height, left, bottom, top = 760, 180, 48, 22, 8
    plot_w, plot_h = width - left - 4, height - bottom - top
    labels = {value: str(label) for value, label in Delivery.Outcome.choices}
    peak = max((sum(counts.values()) for _, counts in series), default=0)
    scale = plot_h / peak if peak else 0.0
    slot = plot_w / max(len(series), 1)
    label_every = -(-len(series) // 8) or 1
    bars = []
    for index, (day, counts) in enumerate(series):
        x = left + index * slot
        y = float(top + plot_h)
        parts = []
        for outcome, colour in OUTCOME_COLOURS.items():
            count = counts.get(outcome, 0)
            if not count:
                continue
            h = count * scale
            y -= h
            parts.append(
                {
                    "x": round(x + slot * 0.1, 1),
                    "y": round(y, 1),
                    "width": round(slot * 0.8, 1),
                    "height": round(max(h, 0.5), 1),
                    "colour": colour,
                    "title": f"{date_format(day, DAY_FORMAT)}: {count} {labels[outcome]}",
                }
            )
        summary = [f"{counts[o]} {labels[o]}" for o in OUTCOME_COLOURS if counts.get(o)]
        bars.append(
            {
                "day": day,
                "total": sum(counts.values()),
                "parts": parts,
                "label": date_format(day, DAY_LABEL_FORMAT) if index % label_every == 0 else "",
                "label_x": round(x + slot / 2, 1),
                "summary": ", ".join(summary) or "0",
            }
        )
    return {
        "width": width,
        "height": height,
        "plot_left": left,
        "plot_right": width - 4,
        "plot_top": top,
        "plot_bottom": top + plot_h,
        "label_y": height - 6,
        "peak": peak,
        "bars": bars,
        "legend": [
            {"label": labels[outcome], "colour": colour, "total": total}
            for outcome, colour in OUTCOME_COLOURS.items()
            # URLs skipped by the preflight are named only on a site that has some.
            if (total := sum(counts.get(outcome, 0) for _, counts in series))
            or outcome != "skipped"
        ],
        "days": len(series),
    }


# --------------------------------------------------------------------------- the history


class SubmitURLsForm(forms.Form):
    urls = forms.CharField(
        label=_("URLs"),
        widget=forms.Textarea(attrs={"rows": 14, "cols": 100, "spellcheck": "false"}),
        help_text=_(
            "One page a line: its full address (https://…), or its path on this site "
            "starting with /. Blank lines and lines starting with # are skipped."
        ),
    )
    force = forms.BooleanField(
        label=_("Send even pages sent recently"),
        required=False,
        initial=True,
        help_text=_(
            "A page a search engine has just accepted is normally not sent to it again for "
            "a while. Leave this ticked to send every page now."
        ),
    )

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        conf = _settings_or_none()
        if conf is None:
            return
        self.fields["urls"].help_text = _(
            "One page a line: its full address (https://…), or its path on this site "
            "starting with / (%(example)s). Blank lines and lines starting with # are skipped."
        ) % {"example": f"/about/ is {conf.base_url.rstrip('/')}/about/"}
        if conf.debounce_ttl:
            self.fields["force"].help_text = _(
                "A page a search engine has accepted is not sent to it again for %(time)s. "
                "Leave this ticked to send every page now."
            ) % {"time": _duration(conf.debounce_ttl)}


def _duration(seconds: int) -> str:
    """``600`` → "10 minutes", for an editor."""
    if seconds % 3600 == 0:
        hours = seconds // 3600
        return ngettext("%(n)d hour", "%(n)d hours", hours) % {"n": hours}
    if seconds % 60 == 0:
        minutes = seconds // 60
        return ngettext("%(n)d minute", "%(n)d minutes", minutes) % {"n": minutes}
    return ngettext("%(n)d second", "%(n)d seconds", seconds) % {"n": seconds}


@admin.register(Delivery)
class DeliveryAdmin(_ModelAdmin):
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
        from .delivery.history import has_url_index, with_urls

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
        conf = _settings_or_none()
        if conf is None or not conf.crawl_enabled:
            return self.fieldsets
        return [*self.fieldsets, (_("Crawled"), {"fields": ["crawled"]})]

    def has_add_permission(self, request: HttpRequest) -> bool:
        return False

    def has_change_permission(self, request: HttpRequest, obj: Delivery | None = None) -> bool:
        return False

    def has_send_again_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("indexnow.send_again")

    def has_submit_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("indexnow.submit_urls")

    # -- list

    def get_queryset(self, request: HttpRequest) -> QuerySet[Delivery]:
        # The list never loads URL texts (up to 10,000 URLs a row); the detail
        # page loads them when it shows them.
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
        from .crawl.display import delivery_html

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
        from .transports import job_html

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
            conf = _settings_or_none()
            days = conf.history_retention_days if conf else 14
            queryset = context["cl"].queryset
            context["indexnow_chart"] = chart(_urls_per_day(queryset, days))
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
        conf = _settings_or_none()
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
            % {"count": count, "records": records, "how": _how_sent(conf)},
            messages.SUCCESS,
        )
        return response

    # -- the "Submit URLs" page

    def get_urls(self) -> list[URLPattern]:
        info = self.opts.app_label, self.opts.model_name
        return [
            path(
                "submit/",
                self.admin_site.admin_view(self.submit_view),
                name="{}_{}_submit".format(*info),
            ),
            path(
                "report/",
                self.admin_site.admin_view(self.report_view),
                name="{}_{}_report".format(*info),
            ),
            *super().get_urls(),
        ]

    def report_view(self, request: HttpRequest) -> HttpResponse:
        """The freshness report of ``manage.py indexnow_report`` (:mod:`.report`)."""
        if not self.has_view_permission(request):
            raise PermissionDenied
        conf = get_settings()
        try:
            days = max(1, min(int(request.GET.get("days", 7)), 366))
        except ValueError:
            days = 7
        context = {
            **self.admin_site.each_context(request),
            "title": _("IndexNow freshness report"),
            "crumb": _("Freshness report"),
            "page_class": "indexnow-report",
            "opts": self.opts,
            "indexnow_admin": admin_markup(),
            "has_view_permission": True,
            "report": freshness(days, conf=conf) if conf.history_enabled else None,
            "days": days,
        }
        return TemplateResponse(request, "admin/indexnow/delivery/report.html", context)

    def submit_view(self, request: HttpRequest) -> HttpResponse:
        if not self.has_submit_permission(request):
            raise PermissionDenied
        invalid: list[tuple[int, str, str]] = []
        conf = get_settings()
        if request.method == "POST":
            form = SubmitURLsForm(request.POST)
            if form.is_valid():
                valid, invalid = read_pasted(form.cleaned_data["urls"], conf)
                response = self._submit_page(request, form, invalid)
                if valid:
                    force = form.cleaned_data["force"]
                    count = send_urls(valid, conf=conf, response=response, force=force)
                    messages.success(
                        request,
                        ngettext("%(count)d URL %(how)s.", "%(count)d URLs %(how)s.", count)
                        % {"count": count, "how": _how_sent(conf)},
                    )
                if invalid:
                    messages.error(
                        request,
                        ngettext(
                            "%(count)d line was skipped: see below.",
                            "%(count)d lines were skipped: see below.",
                            len(invalid),
                        )
                        % {"count": len(invalid)},
                    )
                    # Only the lines to correct stay in the box.
                    data = request.POST.copy()
                    data["urls"] = "\n".join(line for _, line, _ in invalid)
                    response.context_data.update(_form_context(SubmitURLsForm(data)))  # type: ignore[union-attr]
                if not valid:
                    messages.error(request, _("No URL to submit."))
                return response
        else:
            form = SubmitURLsForm()
        return self._submit_page(request, form, invalid)

    def _submit_page(
        self, request: HttpRequest, form: SubmitURLsForm, invalid: list[tuple[int, str, str]]
    ) -> TemplateResponse:
        context = {
            **self.admin_site.each_context(request),
            "title": _("Submit URLs to IndexNow"),
            "crumb": _("Submit URLs"),
            "page_class": "indexnow-submit",
            "opts": self.opts,
            **_form_context(form),
            "invalid": invalid,
            "indexnow_admin": admin_markup(),
            "has_view_permission": self.has_view_permission(request),
        }
        return TemplateResponse(request, "admin/indexnow/delivery/submit.html", context)


def _form_context(form: SubmitURLsForm) -> dict[str, Any]:
    """The form, and the same as the admin's fieldsets, so that it renders like a change form
    of the installed Django (``admin/includes/fieldset.html``)."""
    fieldsets = [(None, {"fields": list(form.fields)})]
    # AdminForm renders any form; its stubs ask for a ModelForm.
    adminform = helpers.AdminForm(form, fieldsets, {})  # type: ignore[arg-type]
    return {"form": form, "adminform": adminform}


def _moment(when: datetime) -> str:
    local = localtime(when)
    return format_html(
        '<time datetime="{}">{}</time>', local.isoformat(), date_format(local, SENT_FORMAT)
    )


def _settings_or_none() -> IndexNowSettings | None:
    from .exceptions import IndexNowConfigError

    try:
        return get_settings()
    except IndexNowConfigError:
        return None


def _urls_per_day(queryset: QuerySet[Delivery], days: int) -> list[tuple[date, dict[str, int]]]:
    from .delivery.history import urls_per_day

    return urls_per_day(queryset, days)


# --------------------------------------------------------------------------- per object


class IndexNowAdminMixin:
    """For the ``ModelAdmin`` of a registered model: IndexNow on its change page.

    The change page says when the object's URLs were last accepted, and by
    which engines (from the history), and offers "Submit now", which sends
    its current URLs through the normal pipeline, ignoring the debounce store.
    Put it before ``admin.ModelAdmin``::

        @admin.register(Post)
        class PostAdmin(IndexNowAdminMixin, admin.ModelAdmin):
            ...

    The page is rendered by ``admin/indexnow/object_change_form.html``, which
    extends the change form the admin would otherwise use (yours included).
    """

    indexnow_change_form_template = "admin/indexnow/object_change_form.html"

    def get_urls(self) -> list[URLPattern]:
        model_admin: Any = self
        info = model_admin.opts.app_label, model_admin.opts.model_name
        return [
            path(
                "<path:object_id>/indexnow-submit/",
                model_admin.admin_site.admin_view(self.indexnow_submit_view),
                name="{}_{}_indexnow_submit".format(*info),
            ),
            *super().get_urls(),  # type: ignore[misc]
        ]

    def render_change_form(
        self,
        request: HttpRequest,
        context: dict[str, Any],
        add: bool = False,
        change: bool = False,
        form_url: str = "",
        obj: Model | None = None,
    ) -> HttpResponse:
        response: HttpResponse = super().render_change_form(  # type: ignore[misc]
            request, context, add, change, form_url, obj
        )
        if obj is None or add or not isinstance(response, TemplateResponse):
            return response
        extra = self.indexnow_context(request, obj)
        if extra is None:
            return response
        base = response.template_name
        names = [base] if isinstance(base, str) else list(base or [])  # type: ignore[arg-type]
        extra["indexnow_base_template"] = select_template(names)
        response.context_data = {**(response.context_data or {}), **extra}
        response.template_name = self.indexnow_change_form_template
        return response

    def indexnow_context(self, request: HttpRequest, obj: Model) -> dict[str, Any] | None:
        """What the change page shows about ``obj``, or ``None`` to show nothing."""
        from .delivery.history import last_accepted
        from .registration.registry import get_registration

        options = get_registration(type(obj))
        if options is None or not request.user.has_module_perms("indexnow"):
            return None
        urls = _object_urls(options, obj)
        can_view = request.user.has_perm("indexnow.view_delivery")
        conf = _settings_or_none()
        model_admin: Any = self
        return {
            "indexnow": {
                "urls": urls,
                "public": _is_public(options, obj),
                "accepted": last_accepted(urls) if can_view and urls else None,
                "crawled": _crawled(urls, conf) if can_view and urls else None,
                "retention_days": conf.history_retention_days if conf else None,
                "can_submit": request.user.has_perm("indexnow.submit_urls"),
                "submit_url": reverse(
                    _admin_url_name(model_admin, "indexnow_submit"), args=[obj.pk]
                ),
                "history_url": _history_url(model_admin.admin_site.name, urls) if can_view else "",
            }
        }

    def indexnow_submit_view(self, request: HttpRequest, object_id: str) -> HttpResponse:
        """POST: send the object's current URLs now; then back to its change page."""
        from .registration.registry import get_registration

        model_admin: Any = self
        if request.method != "POST":
            raise PermissionDenied
        obj = model_admin.get_object(request, unquote(object_id))
        if obj is None or not request.user.has_perm("indexnow.submit_urls"):
            raise PermissionDenied
        if not model_admin.has_view_or_change_permission(request, obj):
            raise PermissionDenied
        back = reverse(_admin_url_name(model_admin, "change"), args=[obj.pk])
        response = HttpResponseRedirect(back)
        options = get_registration(type(obj))
        conf = _settings_or_none()
        if options is None or conf is None:
            model_admin.message_user(
                request, _("This object is not submitted to IndexNow."), messages.ERROR
            )
            return response
        if not _is_public(options, obj):
            model_admin.message_user(
                request,
                _("Not submitted: this object is not public (not published, or not yet)."),
                messages.WARNING,
            )
            return response
        count = send_urls(_object_urls(options, obj, public=True), conf=conf, response=response)
        model_admin.message_user(
            request,
            ngettext("%(count)d URL %(how)s.", "%(count)d URLs %(how)s.", count)
            % {"count": count, "how": _how_sent(conf)},
            messages.SUCCESS if count else messages.WARNING,
        )
        return response


def _crawled(urls: Sequence[str], conf: IndexNowSettings | None) -> list[dict[str, Any]] | None:
    """The last fetch of each crawler among ``urls``; ``None`` with crawl receipts off."""
    if conf is None or not conf.crawl_enabled:
        return None
    from .crawl.display import panel_context

    return panel_context(urls)


def _is_public(options: Any, obj: Model) -> bool:
    """Whether ``obj`` is public (in some language, when its URLs are worked out in several)."""
    try:
        return any(state.public for state in options.urls_per_language(obj).values())
    except Exception:
        logger.warning("IndexNow admin cannot tell whether %r is public", obj, exc_info=True)
        return False


def _object_urls(options: Any, obj: Model, *, public: bool = False) -> list[str]:
    """The object's current URLs in every language, absolute and normalized (``public``:
    only those of the languages it is public in); ``[]`` when they cannot be computed."""
    from .delivery.send import clean_urls
    from .registration.languages import in_language

    conf = _settings_or_none()
    if conf is None:
        return []
    try:
        languages = options.url_languages()
        if public:
            raw = options.public_urls(obj)
        elif languages is None:
            raw = [str(url) for url in options.urls(obj)]
        else:
            raw = []
            for language in languages:
                try:
                    with in_language(obj, language):
                        raw.extend(str(url) for url in options.urls(obj))
                except Exception:  # a language the object is not written in, say
                    logger.debug("IndexNow admin: no URLs of %r in %s", obj, language)
    except Exception:
        logger.warning("IndexNow admin cannot compute the URLs of %r", obj, exc_info=True)
        return []
    return clean_urls(raw, conf)[0]


def _admin_url_name(model_admin: Any, view: str) -> str:
    opts = model_admin.opts
    return f"{model_admin.admin_site.name}:{opts.app_label}_{opts.model_name}_{view}"


def _history_url(site_name: str, urls: Sequence[str]) -> str:
    if not urls:
        return ""
    from urllib.parse import urlencode

    changelist = reverse(f"{site_name}:indexnow_delivery_changelist")
    return f"{changelist}?{urlencode({'q': urls[0]})}"
