"""Sizes a listing names, kept for the opens after it (stores/sizes.py)."""

from __future__ import annotations

from csup_async.stores import sizes
from csup_async.stores.s3 import S3Store, parse_listing
from csup_async.stores.sizes import ListedSizes, listed_size

PAGE = b"""<?xml version="1.0" encoding="UTF-8"?>
<ListBucketResult xmlns="http://s3.amazonaws.com/doc/2006-03-01/">
<Name>b</Name><IsTruncated>false</IsTruncated>
<Contents><Key>d/a.csup</Key><Size>1234</Size></Contents>
<Contents><Key>d/b.csup</Key></Contents>
</ListBucketResult>"""


def test_an_s3_page_gives_each_key_with_its_size() -> None:
    keys, token = parse_listing(PAGE, "s3://b/d/")
    assert keys == [("d/a.csup", "1234"), ("d/b.csup", None)] and token == ""


def test_sizes_are_kept_bounded_and_only_when_usable(monkeypatch) -> None:
    monkeypatch.setattr(sizes, "KEEP", 2)
    memo = ListedSizes()
    for url, n in (("s3://b/x", "10"), ("s3://b/y", None), ("s3://b/z", "-1"),
                   ("s3://b/w", 7), ("s3://b/v", "3")):
        memo.note(url, n)
    assert memo.get("s3://b/x") is None  # the oldest, forgotten past KEEP
    assert (memo.get("s3://b/w"), memo.get("s3://b/v")) == (7, 3)
    assert memo.get("s3://b/y") is None and memo.get("s3://b/z") is None


def test_a_store_without_listings_has_no_sizes() -> None:
    assert listed_size(object(), "s3://b/x") is None
    store = S3Store(region="us-east-1", anonymous=True)
    assert listed_size(store, "s3://b/x") is None
    store.listed_sizes.note("s3://b/x", "5")
    assert listed_size(store, "s3://b/x") == 5
