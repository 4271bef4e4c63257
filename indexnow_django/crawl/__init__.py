"""Crawl receipts: when each engine's crawler fetched a URL after an engine accepted it.

The flow, module by module:

- :mod:`.crawlers`: the crawlers known (user-agent tokens, DNS domains, published ranges);
- :mod:`.notice`: in the request (the middleware), a crawler's fetch noticed and kept in
  Redis with one write; a visitor's request costs one user-agent test;
- :mod:`.verify`: in the worker, the crawler verified by its address (ranges, or reverse
  and forward DNS, cached a day);
- :mod:`.receipts`: in the worker, verified fetches matched with the URLs' acceptances
  (:class:`~.models.CrawlWait`, recorded with each accepted POST) and recorded as
  :class:`~.models.CrawlReceipt`, with the signal ``url_crawled``; what the admin and
  ``indexnow_explain`` read of them;
- :mod:`.report`: the figures of ``indexnow_report``; :mod:`.display`: the admin's;
  :mod:`.checks`: ``indexnow.W050``.

Everything here is off unless ``INDEXNOW["CRAWL"]["ENABLED"]`` (docs/crawl.md).
"""
