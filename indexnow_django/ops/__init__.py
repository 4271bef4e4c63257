"""The operator's tools: what ``indexnow_check`` finds (diagnostics.py, findings.py),
the health of each host and engine (health.py), the freshness report
(``indexnow_report``, report.py) and ``indexnow_explain`` (explain.py)."""
