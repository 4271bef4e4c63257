"""The chart above the history's list: URLs per day and outcome, as stacked bars drawn
in an SVG by ``admin/indexnow/delivery/change_list.html``."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import date
from typing import Any

from django.db.models import QuerySet
from django.utils.formats import date_format

from ..models import Delivery
from .common import OUTCOME_COLOURS

__all__ = ["DAY_FORMAT", "DAY_LABEL_FORMAT", "chart", "urls_per_day"]

#: A day (the chart's tooltips), and under the chart's bars.
DAY_FORMAT = "DATE_FORMAT"
DAY_LABEL_FORMAT = "MONTH_DAY_FORMAT"


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


def urls_per_day(queryset: QuerySet[Delivery], days: int) -> list[tuple[date, dict[str, int]]]:
    """The URLs of ``queryset`` (the list as filtered) per local day and outcome, over the
    last ``days`` days and today."""
    from ..sending.history import urls_per_day

    return urls_per_day(queryset, days)
