"""Does delivery work? Per host and engine, from the history: the last accepted POST, the
last answer, and the current run of failed POSTs.

:func:`host_engine_health` answers for every host and engine of the settings
(each of ``HOSTS`` with each of ``ENGINES``) with four to six indexed queries each
(the index ``indexnow_host_engine_outcome`` of :class:`~indexnow_django.models.Delivery`):
when it last accepted, retried and rejected a POST, the newest of those records, and,
when that one failed, a count of the failures of each kind since the accepted one.
However long the history, each reads a few index entries, plus one per failure of the
current run.

A :class:`Health` is :data:`FAIL` after :data:`RUN_LENGTH` or more final rejections
(400, 403, 422...) since the last accepted POST, or as many failures of any kind
whose latest is a final rejection (a 429 in a run of 403s does not hide the key
file); :data:`WARN` after as many failures ending in a retryable answer (429, 5xx,
timeouts) or when POSTs failed and none was accepted in :data:`STALE_AFTER`;
otherwise OK. :data:`RUN_LENGTH` is the count that makes the CRITICAL log line
(:data:`~indexnow_django.sending.escalation.FAILURES_BEFORE_CRITICAL`): one policy.
``manage.py indexnow_check`` shows one line per host and engine (:func:`findings`)
and the admin's deliveries list shows the ones in trouble above the list. Dry runs
and URLs skipped by the preflight are no POSTs and do not count.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from dataclasses import dataclass
from datetime import datetime, timedelta
from datetime import timezone as dt_timezone
from typing import Any

from django.db.models import Count, Max, Min
from django.utils import timezone

from ..conf import IndexNowSettings
from ..protocol.client import excerpt
from ..sending.escalation import FAILURES_BEFORE_CRITICAL

__all__ = [
    "FAIL",
    "OK",
    "RUN_LENGTH",
    "STALE_AFTER",
    "WARN",
    "Health",
    "findings",
    "host_engine_health",
    "trouble",
]

OK, WARN, FAIL = "OK", "WARN", "FAIL"
#: Failed POSTs in a row for a host and engine that make a warning (ending in a retryable
#: answer) or a failure of the check (ending in a final rejection): the run that makes the
#: CRITICAL log line.
RUN_LENGTH = FAILURES_BEFORE_CRITICAL
#: Failed POSTs and no accepted one for this long: a warning.
STALE_AFTER = timedelta(hours=24)
#: Outcomes of records that are POSTs to an engine (not dry runs, not skipped URLs).
POSTED = ("accepted", "retry", "rejected")
#: Characters of the last answer shown.
ANSWER_CHARS = 120


@dataclass(frozen=True)
class Health:
    """What the history says of one host and engine."""

    host: str
    engine: str
    #: The newest POST: when, its outcome, status (``None``: no answer) and answer.
    last_sent: datetime | None = None
    last_outcome: str | None = None
    last_status: int | None = None
    last_answer: str = ""
    last_accepted: datetime | None = None
    #: Failed POSTs since the last accepted one, of them final rejections, and the first.
    failures: int = 0
    final_failures: int = 0
    failing_since: datetime | None = None
    #: When this was worked out.
    now: datetime | None = None

    @property
    def level(self) -> str:
        if self.final_failures >= RUN_LENGTH:
            return FAIL
        if self.failures >= RUN_LENGTH and self.last_outcome == "rejected":
            return FAIL
        if self.failures >= RUN_LENGTH or self.stale:
            return WARN
        return OK

    @property
    def stale(self) -> bool:
        """POSTs failed, and none was accepted within :data:`STALE_AFTER`."""
        if not self.failures:
            return False
        now = self.now or timezone.now()
        return self.last_accepted is None or now - self.last_accepted > STALE_AFTER

    @property
    def answer(self) -> str:
        """The last answer: the start of what was recorded, after its status if it does not
        name it (``no answer`` for a timeout or a network error)."""
        status = str(self.last_status) if self.last_status is not None else "no answer"
        text = self.last_answer.removeprefix(f"{self.engine} answered ")
        text = excerpt(text, ANSWER_CHARS)
        if not text:
            return status
        return text if self.last_status is None or status in text else f"{status} {text}"

    def describe(self) -> str:
        """One line: the failures or the last accepted POST, and the last answer."""
        where = f"{self.host} → {self.engine}"
        if self.last_sent is None:
            return f"{where}: no POST recorded"
        accepted = (
            f"last accepted {_when(self.last_accepted, self.now)}"
            if self.last_accepted
            else "never accepted"
        )
        if not self.failures:
            return f"{where}: {accepted}, last answer {self.answer}"
        kind = "final rejections" if self.final_failures == self.failures else "failed POSTs"
        return (
            f"{where}: {self.failures} {kind} in a row since "
            f"{_when(self.failing_since, self.now)}, last answer {self.answer}; {accepted}"
        )

    def as_dict(self) -> dict[str, Any]:
        def iso(moment: datetime | None) -> str | None:
            return moment.isoformat() if moment else None

        return {
            "host": self.host,
            "engine": self.engine,
            "level": self.level,
            "last_sent": iso(self.last_sent),
            "last_outcome": self.last_outcome,
            "last_status": self.last_status,
            "last_answer": excerpt(self.last_answer, ANSWER_CHARS),
            "last_accepted": iso(self.last_accepted),
            "failures": self.failures,
            "final_failures": self.final_failures,
            "failing_since": iso(self.failing_since),
        }


def _when(moment: datetime | None, now: datetime | None) -> str:
    if moment is None:
        return "-"
    now = now or timezone.now()
    seconds = max(0, int((now - moment).total_seconds()))
    if seconds < 120:
        ago = f"{seconds}s"
    elif seconds < 7200:
        ago = f"{seconds // 60}m"
    elif seconds < 172800:
        ago = f"{seconds // 3600}h"
    else:
        ago = f"{seconds // 86400}d"
    return f"{moment.astimezone(dt_timezone.utc):%Y-%m-%d %H:%M:%S} UTC ({ago} ago)"


def host_engine_health(
    conf: IndexNowSettings,
    *,
    pairs: Iterable[tuple[str, str]] | None = None,
    now: datetime | None = None,
) -> list[Health]:
    """The :class:`Health` of each host and engine of ``conf`` (or of ``pairs``, ``(host,
    engine name)``), in order. Raises :class:`django.db.DatabaseError` when the history
    cannot be read."""
    from ..models import Delivery

    now = now or timezone.now()
    if pairs is None:
        pairs = [(host, engine.name) for host in conf.hosts for engine in conf.engines]
    found: list[Health] = []
    for host, engine in pairs:
        records = Delivery.objects.filter(host=host, engine=engine)
        # When each outcome was last recorded: MAX over the end of its range of the index
        # on (host, engine, outcome, sent_at), read backwards, however long the history.
        newest = {
            outcome: records.filter(outcome=outcome).aggregate(last=Max("sent_at"))["last"]
            for outcome in POSTED
        }
        moments = {outcome: moment for outcome, moment in newest.items() if moment is not None}
        if not moments:
            found.append(Health(host, engine, now=now))
            continue
        outcome, moment = max(moments.items(), key=lambda item: item[1])
        status, answer = records.filter(outcome=outcome, sent_at=moment).values_list(
            "status", "answer"
        ).first() or (None, "")
        last = (moment, outcome, status, answer)
        accepted = newest["accepted"]
        run: dict[str, Any] = {"count": 0, "final": 0, "since": None}
        if outcome != "accepted":  # the failures since the last accepted POST, per outcome
            for failure in ("retry", "rejected"):
                failed = records.filter(outcome=failure)
                if accepted is not None:
                    failed = failed.filter(sent_at__gt=accepted)
                part = failed.aggregate(count=Count("*"), since=Min("sent_at"))
                run["count"] += part["count"]
                run["final"] += part["count"] if failure == "rejected" else 0
                if part["since"] is not None and (
                    run["since"] is None or part["since"] < run["since"]
                ):
                    run["since"] = part["since"]
        found.append(
            Health(
                host,
                engine,
                last_sent=last[0],
                last_outcome=last[1],
                last_status=last[2],
                last_answer=last[3],
                last_accepted=accepted,
                failures=run["count"],
                final_failures=run["final"],
                failing_since=run["since"],
                now=now,
            )
        )
    return found


def trouble(conf: IndexNowSettings) -> list[Health]:
    """The hosts and engines whose health is not OK (what the admin shows); none when
    the history cannot be read."""
    from django.db import DatabaseError

    try:
        return [h for h in host_engine_health(conf) if h.level != OK]
    except DatabaseError:
        return []


def findings(conf: IndexNowSettings) -> Iterator[tuple[str, str, str | None, dict[str, Any]]]:
    """``indexnow_check``'s section ``health``: ``(level, message, hint, data)`` for each
    host and engine (or one that says why there is nothing to tell)."""
    from django.db import DatabaseError

    from ..models import Delivery

    if not conf.history_enabled:
        yield (
            OK,
            "INDEXNOW['HISTORY']['ENABLED'] is False: POSTs are not recorded, so nothing "
            "tells whether they are accepted",
            "Set HISTORY = {'ENABLED': True} to see the last answers here and in the admin.",
            {},
        )
        return
    try:
        found = host_engine_health(conf)
    except DatabaseError as exc:
        yield (
            WARN,
            f"the history (table {Delivery._meta.db_table}) could not be read: "
            f"{excerpt(str(exc), 120)}",
            "Run manage.py migrate.",
            {},
        )
        return
    for health in found:
        yield health.level, health.describe(), _hint(health), health.as_dict()


def _hint(health: Health) -> str | None:
    if health.level == OK:
        return None
    if health.level == FAIL and health.last_status == 403:
        return (
            "The engine cannot verify the key: check the key file (Hosts and key files above). "
            "The deliveries in the admin show each answer."
        )
    if health.level == FAIL:
        return (
            "The engine refuses the submissions: read its answer in the admin's deliveries "
            "and check BASE_URL and HOSTS."
        )
    if health.failures >= RUN_LENGTH:
        return (
            "The URLs are retried but none gets through: the engine is busy (429) or failing; "
            "THROTTLE and RETRY set how hard it is pressed."
        )
    see = "See the answers in the admin's deliveries."
    if health.last_accepted is None:
        return (
            "No POST has been accepted yet: the first failed at "
            f"{_when(health.failing_since, health.now)}. {see}"
        )
    return f"Nothing has been accepted since {_when(health.last_accepted, health.now)}. {see}"
