from __future__ import annotations

from django.http import HttpRequest, HttpResponse
from django.shortcuts import get_object_or_404, render

from .models import Category, Page, Post


def post_list(request: HttpRequest) -> HttpResponse:
    posts = Post.objects.public().select_related("category")
    return render(request, "blog/post_list.html", {"posts": posts})


def post_detail(request: HttpRequest, slug: str) -> HttpResponse:
    post = get_object_or_404(Post.objects.public().select_related("category"), slug=slug)
    return render(request, "blog/post_detail.html", {"post": post})


def category_detail(request: HttpRequest, slug: str) -> HttpResponse:
    category = get_object_or_404(Category, slug=slug)
    posts = category.posts.public()
    return render(request, "blog/category_detail.html", {"category": category, "posts": posts})


def page_detail(request: HttpRequest, slug: str) -> HttpResponse:
    page = get_object_or_404(Page, slug=slug)
    return render(request, "blog/page_detail.html", {"page": page})
