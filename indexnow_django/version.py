"""The package's version, in a module of its own that imports nothing (the HTTP client's
User-Agent names it)."""

__version__ = "0.1.0.dev0"
