"""A site's own middleware built on IndexNowMiddleware."""

from indexnow_django.middleware import IndexNowMiddleware


class OwnIndexNowMiddleware(IndexNowMiddleware):
    pass
