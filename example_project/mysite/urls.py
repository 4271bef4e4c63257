from django.contrib import admin
from django.urls import include, path

urlpatterns = [
    path("admin/", admin.site.urls),
    # Queues, workers and failed jobs, browsable by staff.
    path("django-rq/", include("django_rq.urls")),
    # The IndexNow key file: /<KEY>.txt
    path("", include("indexnow_django.urls")),
    path("", include("blog.urls")),
]
