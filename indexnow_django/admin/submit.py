"""The "Submit URLs" page of the history (``…/indexnow/delivery/submit/``): a form of
pasted URLs, read by :mod:`indexnow_django.manual.entries` and sent by
:func:`indexnow_django.manual.runs.send_urls`. Needs ``indexnow.submit_urls``."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin, messages
from django.contrib.admin import helpers
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from ..compat import admin_markup
from ..conf import get_settings
from ..manual.entries import read_pasted
from ..manual.runs import send_urls
from ..models import Delivery
from .common import how_sent, page, settings_or_none

if TYPE_CHECKING:
    _ModelAdmin = admin.ModelAdmin[Delivery]
else:  # ModelAdmin is generic only to type checkers
    _ModelAdmin = admin.ModelAdmin

__all__ = ["SubmitURLsForm", "SubmitURLsPage"]


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
        conf = settings_or_none()
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


class SubmitURLsPage(_ModelAdmin):
    """The page, as part of the history's admin (:class:`~.history.DeliveryAdmin`)."""

    def has_submit_permission(self, request: HttpRequest) -> bool:
        return request.user.has_perm("indexnow.submit_urls")

    def get_urls(self) -> list[URLPattern]:
        return [page(self, "submit/", self.submit_view, "submit"), *super().get_urls()]

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
                        % {"count": count, "how": how_sent(conf)},
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
