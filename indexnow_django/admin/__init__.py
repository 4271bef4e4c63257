"""IndexNow in the Django admin: the history of POSTs, "Send again", "Submit URLs", the
freshness report, and :class:`IndexNowAdminMixin` for the admin of a registered model.

Django's admin imports this module (``admin.autodiscover()``), which registers the
history's admin; the rest lives in a module per concern:

- :mod:`.history`: :class:`DeliveryAdmin`, the list of POSTs (filters, URL search, the
  chart of :mod:`.charts`), a record, "Send again";
- :mod:`.submit`: the "Submit URLs" page and its form; :mod:`.report`: the freshness
  report's page; both are part of :class:`DeliveryAdmin`;
- :mod:`.mixin`: :class:`IndexNowAdminMixin`, for a registered model's change page;
- :mod:`.common`: the settings when valid, how the chosen transport sends, the outcomes'
  colours.

Everything here is for staff with the app's permissions: seeing deliveries
needs ``indexnow.view_delivery``, the "Send again" action
``indexnow.send_again``, the "Submit URLs" page and the "Submit now" button
``indexnow.submit_urls``. Sending goes through the normal pipeline
(:func:`indexnow_django.units.dispatch.dispatch`, ignoring the debounce store), so
the settings decide whether a job is queued or the URLs are sent after the
response.
"""

from __future__ import annotations

from django.contrib import admin

from ..manual.runs import send_urls
from ..models import Delivery
from .charts import chart
from .history import DeliveryAdmin
from .mixin import IndexNowAdminMixin
from .submit import SubmitURLsForm

__all__ = [
    "DeliveryAdmin",
    "IndexNowAdminMixin",
    "SubmitURLsForm",
    "chart",
    "send_urls",
]

admin.site.register(Delivery, DeliveryAdmin)
