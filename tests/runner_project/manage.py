#!/usr/bin/env python
"""The small project's manage.py: ``python tests/runner_project/manage.py test ...``."""

import os
import sys
from pathlib import Path

if __name__ == "__main__":
    sys.path.insert(0, str(Path(__file__).resolve().parents[2]))
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "tests.runner_project.settings")
    from django.core.management import execute_from_command_line

    execute_from_command_line(sys.argv)
