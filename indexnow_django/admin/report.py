"""The freshness report of ``manage.py indexnow_report`` (:mod:`indexnow_django.ops.report`)
as a page of the history (``…/indexnow/delivery/report/``), for those who may see it."""

from __future__ import annotations

from typing import TYPE_CHECKING

from django.contrib import admin
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse
from django.template.response import TemplateResponse
from django.urls import URLPattern
from django.utils.translation import gettext_lazy as _

from ..compat import admin_markup
from ..conf import get_settings
from ..models import Delivery
from ..ops.report import freshness
from .common import page

if TYPE_CHECKING:
    _ModelAdmin = admin.ModelAdmin[Delivery]
else:  # ModelAdmin is generic only to type checkers
    _ModelAdmin = admin.ModelAdmin

__all__ = ["ReportPage"]


class ReportPage(_ModelAdmin):
    """The page, as part of the history's admin (:class:`~.history.DeliveryAdmin`)."""

    def get_urls(self) -> list[URLPattern]:
        return [page(self, "report/", self.report_view, "report"), *super().get_urls()]

    def report_view(self, request: HttpRequest) -> HttpResponse:
        """The last ``?days=`` days (7 by default, 1 to 366)."""
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
