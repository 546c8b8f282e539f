"""The head read sent beside the tail read: its size from what the open knows
(readers/headhint.head_size)."""

from __future__ import annotations

import pytest

import planner as P
from csup_async.readers import headhint
from csup_async.stores.s3 import S3Store

S3 = P.get_profile("s3")
TAIL = P.tail_prefetch_size(S3)  # 1 MiB: files up to 2 MiB (with the gap) read whole


@pytest.fixture
def store() -> S3Store:
    return S3Store(region="us-east-1", anonymous=True)


def test_a_place_not_seen_before_gets_a_small_head_read(store: S3Store) -> None:
    assert headhint.head_size(store, "s3://b/d/x.csup", S3) == S3.tail_min == 65536


def test_a_listed_size_the_tail_read_holds_gets_none(store: S3Store) -> None:
    assert headhint.head_size(store, "s3://b/d/x.csup", S3, size=500_000) is None
    assert headhint.head_size(store, "s3://b/d/x.csup", S3, size=TAIL + S3.gap_limit) is None
    assert headhint.head_size(store, "s3://b/d/x.csup", S3, size=50 << 20) == S3.tail_min


def test_the_place_decides_once_a_file_there_was_opened(store: S3Store) -> None:
    headhint.remember(store, "s3://b/v23/a.csup", True)
    headhint.remember(store, "s3://b/own/a.csup", False)
    assert headhint.head_size(store, "s3://b/v23/b.csup", S3) == TAIL
    assert headhint.head_size(store, "s3://b/own/b.csup", S3) is None
    assert headhint.head_size(store, "s3://b/other/b.csup", S3) == S3.tail_min


def test_cold_head_reads_can_be_turned_off(store: S3Store, monkeypatch) -> None:
    monkeypatch.setenv("CSUP_COLD_HEAD_READ", "0")
    assert headhint.head_size(store, "s3://b/d/x.csup", S3) is None
    headhint.remember(store, "s3://b/d/a.csup", True)
    assert headhint.head_size(store, "s3://b/d/x.csup", S3) == TAIL  # learnt, still used


def test_a_store_that_cannot_read_heads_gets_none() -> None:
    assert headhint.head_size(object(), "/tmp/x.csup", S3) is None
