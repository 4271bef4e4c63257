from django.contrib import admin
from django.urls import include, path

from tests.testapp import views
from tests.thirdparty import views as thirdparty_views

urlpatterns = [
    path("admin/", admin.site.urls),
    path("", include("indexnow_django.urls")),
    path("posts/<int:pk>/save/", views.save_post, name="save-post"),
    path("posts/<int:pk>/rename-twice/", thirdparty_views.rename_twice),
    path("events/new/", thirdparty_views.create_event),
]
