"""Integrations with other Django apps, each in its own installable app."""
