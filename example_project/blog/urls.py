from django.urls import path

from . import views

app_name = "blog"

urlpatterns = [
    path("", views.post_list, name="post-list"),
    path("posts/<slug:slug>/", views.post_detail, name="post"),
    path("category/<slug:slug>/", views.category_detail, name="category"),
    path("pages/<slug:slug>/", views.page_detail, name="page"),
]
