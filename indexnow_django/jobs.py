"""The rq jobs' stable dotted paths: jobs already in Redis name them.

``indexnow_django.jobs.deliver`` and ``indexnow_django.jobs.deliver_window`` are
what delivery jobs and coalescing windows' jobs carry; the code is rq's
transport's (:mod:`indexnow_django.transports.rq.jobs`).
``indexnow_django.jobs.publish`` is what a scheduled publication's job carries
(:func:`indexnow_django.units.scheduling.publish`).
"""

from __future__ import annotations

from .transports.rq.jobs import deliver, deliver_window
from .units.scheduling import publish

__all__ = ["deliver", "deliver_window", "publish"]
