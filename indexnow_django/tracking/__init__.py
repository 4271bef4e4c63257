"""Change tracking: what a load, save, delete or m2m change of a registered object submits.

Which models are tracked, and how their objects map to URLs, is
:mod:`indexnow_django.registration.registry`'s concern; this package turns their changes
into URLs (see the change table in the docs) and hands them to the current
unit of work (:mod:`indexnow_django.units.collector`). A published object whose
``publish_at`` is still to come is handed to :mod:`indexnow_django.units.scheduling`.

"Before" is the stored row, at no cost on the read path: each tracked object
keeps the row it was loaded or last saved with in its
:class:`~.state.TrackedState`; a save compares with it and rebuilds the
stored object from it, so a tracked save of a loaded object makes no query
of its own. A query is made only when the row is not known: an object that
was never loaded (built from a revision or by hand with an existing primary
key) or a field deferred when it was loaded.

One module per concern, in the order a change meets them:

* :mod:`.loading`: the tracked classes' ``from_db`` and ``refresh_from_db``
  keep the row;
* :mod:`.save`: the route of a save, from before its write to its URLs;
* :mod:`.delete` and :mod:`.m2m`: deletes and many-to-many changes;
* :mod:`.outcome`: the change table, and one change per object and
  transaction, worked out when it commits;
* :mod:`.bulk`: what bulk operations use;
* :mod:`.state`: what tracking knows of an object and of its model;
* :mod:`.connect`: the handlers and hooks follow the registry.
"""

from __future__ import annotations

from ..registration.registry import ModelIndexNow, get_registration, register, registry, unregister
from .bulk import rebuilt, state_of, urls_of_change
from .connect import connect
from .outcome import DRAFT, Seen
from .save import fields_changed

# The registration names stay importable from here.
__all__ = [
    "DRAFT",
    "ModelIndexNow",
    "Seen",
    "connect",
    "fields_changed",
    "get_registration",
    "rebuilt",
    "register",
    "registry",
    "state_of",
    "unregister",
    "urls_of_change",
]
