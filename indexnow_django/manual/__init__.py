"""The manual submission (``indexnow_submit`` and the admin's "Submit URLs" page):
where the URLs come from (sources.py), what an operator pastes or passes
(entries.py) and one run that sends them (runs.py).

Not ``submit/``: ``indexnow_django.submit`` is the public function that adds URLs to
the current unit of work."""
