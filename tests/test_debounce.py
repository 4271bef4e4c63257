"""The debounce store on a local and on a shared (Redis) cache."""

import threading

import pytest

from indexnow_django.debounce import DebounceStore

URLS = [f"https://www.example.com/{i}/" for i in range(100)]


@pytest.fixture
def django_redis_cache(settings, redis_url):
    """A django-redis cache (alias ``djredis``) on its own Redis database, emptied."""
    settings.CACHES = {
        **settings.CACHES,
        "djredis": {"BACKEND": "django_redis.cache.RedisCache", "LOCATION": f"{redis_url}/2"},
    }
    from django.core.cache import caches

    caches["djredis"].clear()
    yield "djredis"
    caches["djredis"].clear()


@pytest.fixture(params=["default", "shared", "djredis"])
def store(request):
    if request.param == "djredis":
        request.getfixturevalue("django_redis_cache")
    return DebounceStore(request.param, ttl=600, claim_ttl=30)


def test_claim_then_record_blocks_later_claims(store):
    assert store.claim("bing", URLS) == URLS
    store.record("bing", URLS)
    assert store.claim("bing", URLS) == []
    assert store.filter_new("bing", URLS) == []
    # Per engine.
    assert store.claim("yandex", URLS[:3]) == URLS[:3]


def test_release_frees_the_urls(store):
    store.claim("bing", URLS)
    assert store.claim("bing", URLS) == []
    store.release("bing", URLS)
    assert store.claim("bing", URLS) == URLS


def test_force_claims_everything(store):
    store.claim("bing", URLS)
    store.record("bing", URLS)
    assert store.claim("bing", URLS, force=True) == URLS


def test_zero_ttl_disables(store):
    off = DebounceStore(store.cache_alias, ttl=0)
    off.record("bing", URLS)
    assert off.claim("bing", URLS) == URLS


@pytest.mark.parametrize("alias", ["shared", "djredis"])
def test_concurrent_claims_on_redis_never_overlap(request, alias):
    """Eight threads with their own connections race for the same URLs, five rounds:
    each URL is won once per round."""
    if alias == "djredis":
        request.getfixturevalue("django_redis_cache")
    rounds = [[f"{url}round-{n}" for url in URLS] for n in range(5)]
    won: list[list[str]] = []
    barrier = threading.Barrier(8)

    def racer():
        from django.core.cache import caches

        store = DebounceStore(alias, ttl=600, claim_ttl=30)
        try:
            for urls in rounds:
                barrier.wait()
                won.append(store.claim("bing", urls))
        finally:
            # Each thread has its own cache object and connection pool: close it.
            cache = caches[alias]
            if alias == "shared":
                for pool in cache._cache._pools.values():
                    pool.disconnect()
            else:
                cache.close()

    threads = [threading.Thread(target=racer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    flat = [url for claimed in won for url in claimed]
    assert sorted(flat) == sorted(url for urls in rounds for url in urls)


def test_a_claim_reads_back_through_the_cache_api(django_redis_cache):
    """The raw SET NX value is what the cache backend itself would store for 1."""
    from django.core.cache import caches

    for alias in ("shared", django_redis_cache):
        store = DebounceStore(alias, ttl=600, claim_ttl=30)
        store.claim("bing", URLS[:1])
        assert caches[alias].get(store._key("bing", URLS[0])) == 1
        store.record("bing", URLS[:1])
        assert caches[alias].get(store._key("bing", URLS[0])) == 2
