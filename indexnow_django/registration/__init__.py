"""The registration API: which models submit which URLs (registry.py: ``ModelIndexNow``,
``register()``), in which languages (languages.py), and the queryset whose bulk
updates and deletes submit too (queryset.py). ``indexnow_django`` exports the public
names."""
