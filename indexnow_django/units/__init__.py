"""Units of work: the URLs of a request, a command, a task or a ``batch()`` gathered
and flushed once (collector.py), a flush handed to the chosen transport as one parcel
(dispatch.py), and a future ``publish_at`` scheduled on the transport (scheduling.py)."""
