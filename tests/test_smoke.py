from indexnow_django import submit


def test_submit_outside_unit_posts_once(engine):
    submit(["/a/", "https://www.example.com/a/"])
    posts = engine.posts
    assert len(posts) == 1
    assert posts[0].json == {
        "host": "www.example.com",
        "key": "test-key-0123456789",
        "urlList": ["https://www.example.com/a/"],
    }
