"""URLs of the test views (``@pytest.mark.urls("tests.testapp.urls")``)."""

from django.urls import include, path

from tests.testapp import views

urlpatterns = [
    path("", include("indexnow_django.urls")),
    path("posts/<int:pk>/save/", views.save_post, name="save-post"),
    path("pages/<int:pk>/fail/", views.save_page_then_fail),
    path("pages/<int:pk>/async/", views.async_save_page),
    path("nothing/", views.nothing),
    path("stories/<slug:slug>/new/", views.create_story),
    path("stories/<slug:slug>/new-async/", views.async_create_story),
]
