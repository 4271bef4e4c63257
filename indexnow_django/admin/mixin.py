"""IndexNow on the change page of a registered model's admin: :class:`IndexNowAdminMixin`,
which users put on their own ``ModelAdmin`` (``indexnow_django.admin.IndexNowAdminMixin``,
a stable dotted path), with its "Submit now" button."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from django.contrib import messages
from django.contrib.admin.utils import unquote
from django.core.exceptions import PermissionDenied
from django.http import HttpRequest, HttpResponse, HttpResponseRedirect
from django.template.loader import select_template
from django.template.response import TemplateResponse
from django.urls import URLPattern, reverse
from django.utils.translation import gettext_lazy as _
from django.utils.translation import ngettext

from ..conf import IndexNowSettings
from ..manual.runs import send_urls
from .common import how_sent, logger, page, settings_or_none

if TYPE_CHECKING:
    from django.db.models import Model

__all__ = ["IndexNowAdminMixin"]


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
        route = "<path:object_id>/indexnow-submit/"
        return [
            page(self, route, self.indexnow_submit_view, "indexnow_submit"),
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
        from ..registration.registry import get_registration
        from ..sending.history import last_accepted

        options = get_registration(type(obj))
        if options is None or not request.user.has_module_perms("indexnow"):
            return None
        urls = _object_urls(options, obj)
        can_view = request.user.has_perm("indexnow.view_delivery")
        conf = settings_or_none()
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
        from ..registration.registry import get_registration

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
        conf = settings_or_none()
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
            % {"count": count, "how": how_sent(conf)},
            messages.SUCCESS if count else messages.WARNING,
        )
        return response


def _crawled(urls: Sequence[str], conf: IndexNowSettings | None) -> list[dict[str, Any]] | None:
    """The last fetch of each crawler among ``urls``; ``None`` with crawl receipts off."""
    if conf is None or not conf.crawl_enabled:
        return None
    from ..crawl.display import panel_context

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
    from ..registration.languages import in_language
    from ..sending.send import clean_urls

    conf = settings_or_none()
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
