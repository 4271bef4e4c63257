"""A management command is a unit of work (:func:`command_unit`), installed as Django
starts (:func:`install_command_units`) unless ``COMMAND_UNITS`` is ``False``: its URLs
are flushed when it returns, or :data:`~indexnow_django.units.collector.COMMAND_HOLD`
seconds after they were produced if it still runs. Django's ``test`` command is none."""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator
from typing import TYPE_CHECKING

from ..compat import run_commands_in
from .collector import COMMAND_HOLD, current, unit

if TYPE_CHECKING:
    from django.core.management.base import BaseCommand

__all__ = ["command_unit", "install_command_units"]


def install_command_units(enabled: bool = True) -> None:
    """Make every management command a unit of work (:func:`command_unit`), without
    changing the commands: Django sends no signal when a command starts or ends, so
    :func:`indexnow_django.compat.run_commands_in` wraps ``BaseCommand.execute`` once.

    ``enabled``: ``INDEXNOW['COMMAND_UNITS']`` when Django starts; ``False`` leaves
    ``BaseCommand.execute`` as it is, and a command's URLs are then flushed as they
    commit, like those of any code outside a unit of work.
    """
    if enabled:
        run_commands_in(command_unit)


@contextlib.contextmanager
def command_unit(command: BaseCommand) -> Iterator[None]:
    """The unit of work of a management command (``manage.py``, ``call_command``).

    The URLs the command produces are flushed in one call when it returns, or
    :data:`COMMAND_HOLD` seconds after they were produced if it is still
    running then (a worker, a consumer loop, a shell). A command run inside
    another unit (``call_command`` from a view, a job or another command)
    joins that unit. Django's ``test`` command is no unit of work: what the
    tests produce is flushed as it commits, into the tests' captures.
    """
    running = current()
    if (running is not None and running.accepts()) or _runs_tests(command):
        yield
        return
    with unit("command", hold=COMMAND_HOLD) as collector:
        try:
            yield
        finally:
            collector.flush()


def _runs_tests(command: BaseCommand) -> bool:
    """Whether ``command`` is Django's ``test`` command (or a subclass of it)."""
    # Not imported here when no test command was loaded: it imports the test framework.
    module = sys.modules.get("django.core.management.commands.test")
    return module is not None and isinstance(command, module.Command)
