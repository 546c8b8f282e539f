"""Store abilities by Protocol only (#36): csup_async.stores.capabilities."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

import pytest

from csup_async.stores import capabilities as C
from csup_async.stores.fsspec_store import FsspecStore
from csup_async.stores.gcs import GCSStore
from csup_async.stores.http import HTTPStore
from csup_async.stores.local import LocalStore
from csup_async.stores.s3 import S3Store

PROTOCOLS = {"lister": C.Lister, "profiled": C.Profiled, "key_namer": C.KeyNamer,
             "identified": C.Identified, "abandoning": C.Abandoning,
             "object_writer": C.ObjectWriter, "cache_keyed": C.CacheKeyed,
             "measuring": C.Measuring, "tail_revalidating": C.TailRevalidating,
             "pooled": C.Pooled}


def _stores() -> list[Any]:
    return [LocalStore(), S3Store(region="us-east-1"), GCSStore(anonymous=True),
            HTTPStore(), FsspecStore(protocol="memory")]


@pytest.mark.parametrize("store", _stores(), ids=lambda s: type(s).__name__)
def test_abilities_are_the_protocols_answers(store: Any) -> None:
    got = C.abilities(store)
    assert {n: getattr(got, n) for n in PROTOCOLS} == {
        n: isinstance(store, p) for n, p in PROTOCOLS.items()}
    assert C.abilities(store) is got  # answered once per class
    assert C.profile_of(store) == store.default_profile


def test_the_built_in_stores_have_what_the_readers_use() -> None:
    s3, local, mem = S3Store(region="us-east-1"), LocalStore(), FsspecStore(protocol="memory")
    assert C.abilities(s3).lister and C.abilities(s3).object_writer
    assert C.abilities(s3).measuring and C.abilities(s3).tail_revalidating
    assert not C.abilities(local).lister and not C.abilities(local).measuring
    assert C.cache_key(local, "rel/x.csup") == str(Path("rel/x.csup").resolve())
    # an fsspec store's profile is its instance's (by protocol), though its class answers
    assert C.profile_of(mem) == "local"
    assert C.profile_of(FsspecStore(protocol="http")) == "http"


class _Bare:
    """A user's own store: the Store protocol and nothing else."""

    name = "bare"

    async def read_tail(self, key: str, length: int) -> Any: ...
    async def read_range(self, key: str, offset: int, length: int,
                         version: str | None = None) -> bytes: return b""
    async def info(self, key: str) -> Any: ...
    async def close(self) -> None: ...


class _Forwarding:
    """A wrapper that forwards every other attribute to the store it wraps."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner

    def __getattr__(self, name: str) -> Any:
        return getattr(self._inner, name)


class _ProfiledPerInstance(_Bare):
    def __init__(self, profile: str | None) -> None:
        if profile is not None:
            self.default_profile = profile


def test_a_store_without_extras_gets_the_fallbacks() -> None:
    bare = _Bare()
    assert not any(getattr(C.abilities(bare), n) for n in PROTOCOLS)
    assert C.profile_of(bare) == C.FALLBACK_PROFILE
    assert C.cache_key(bare, "k") == "k"
    assert C.display_of(bare, "s3://b/k?X-Amz-Signature=abc") != "s3://b/k?X-Amz-Signature=abc"


def test_wrappers_and_per_instance_abilities_are_answered_per_store() -> None:
    # a forwarding wrapper has whatever the store it wraps has
    assert C.profile_of(_Forwarding(S3Store(region="us-east-1"))) == "s3"
    assert C.profile_of(_Forwarding(_Bare())) == C.FALLBACK_PROFILE
    assert C.abilities(_Forwarding(S3Store(region="us-east-1"))).lister
    assert not C.abilities(_Forwarding(LocalStore())).lister
    # an ability one instance has and another of the same class lacks
    assert C.profile_of(_ProfiledPerInstance("gcs")) == "gcs"
    assert C.profile_of(_ProfiledPerInstance(None)) == C.FALLBACK_PROFILE
    assert C.profile_of(_ProfiledPerInstance("s3")) == "s3"


def test_no_attribute_probes_of_stores_outside_the_protocols() -> None:
    """The Protocols are the one way to ask a store what it can do."""
    root = Path(C.__file__).resolve().parents[1]
    probe = re.compile(r"\b(getattr|hasattr)\((self\.)?_?(store|st)\b")
    found = [f"{p.relative_to(root)}:{i}: {line.strip()}"
             for p in sorted(root.rglob("*.py")) if p.name != "capabilities.py"
             for i, line in enumerate(p.read_text().splitlines(), 1) if probe.search(line)]
    # a wrapper's own __getattr__ forwarding is not a probe
    found = [f for f in found if "return getattr(self._store, name)" not in f]
    assert found == []
