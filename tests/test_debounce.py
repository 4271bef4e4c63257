"""The debounce store on a local and on a shared (Redis) cache."""

import threading

import pytest

from indexnow_django.debounce import DebounceStore

URLS = [f"https://www.example.com/{i}/" for i in range(100)]


@pytest.fixture(params=["default", "shared"])
def store(request):
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


def test_concurrent_claims_on_redis_never_overlap():
    """Eight threads with their own connections race for the same URLs: each URL is won once."""
    won: list[list[str]] = []
    barrier = threading.Barrier(8)

    def racer():
        from django.core.cache import caches

        store = DebounceStore("shared", ttl=600, claim_ttl=30)
        barrier.wait()
        try:
            won.append(store.claim("bing", URLS))
        finally:
            # Each thread has its own cache object and connection pool: close it.
            for pool in caches["shared"]._cache._pools.values():
                pool.disconnect()

    threads = [threading.Thread(target=racer) for _ in range(8)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    flat = [url for claimed in won for url in claimed]
    assert sorted(flat) == sorted(URLS)
