"""A journal's HEAD is untrusted: it cannot make a replay list, fetch or allocate more
than the store holds or the limit allows."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bench.lake_builder import LakeBuilder, PoolInfo, rec
from csup_async.cli import main
from csup_async.lake import LakeError, open_lake
from csup_async.lake.journal import LIST_ABOVE
from csup_async.lake.objects import LakeIO

ROW = rec(("id", "int64"), ("msg", "string"))
HOSTILE = [100_000, 10**7, 10**12]


def build(root: Path) -> tuple[LakeBuilder, PoolInfo]:
    b = LakeBuilder(root)
    p = b.create_pool("logs", key="id", stride=16)
    b.load(p, "main", [{"id": i, "msg": f"a{i}"} for i in range(10)], ROW)
    return b, p


async def _pool(root: Path, *, at: Any = None, **opts: Any) -> tuple[Any, int]:
    """The pool (or the LakeError) and the requests it took."""
    async with open_lake(str(root), **opts) as lk:
        try:
            got: Any = await lk.pool("logs", at=at)
        except LakeError as e:
            got = e
        return got, lk.io.requests


@pytest.mark.parametrize("head", HOSTILE)
def test_a_hostile_branch_head_is_refused_in_a_few_requests(tmp_path: Path, head: int) -> None:
    b, p = build(tmp_path)
    (b.root / p.dir / "branches" / "HEAD").write_bytes(str(head).encode())
    got, requests = asyncio.run(_pool(b.root))
    assert isinstance(got, LakeError), got
    assert p.dir in str(got) and f"{head:,}" in str(got)
    assert requests < 20


@pytest.mark.parametrize("head", HOSTILE)
def test_a_hostile_pools_head_is_refused(tmp_path: Path, head: int) -> None:
    b, _ = build(tmp_path)
    (b.root / "pools" / "HEAD").write_bytes(str(head).encode())
    with pytest.raises(LakeError, match="pools"):
        asyncio.run(_pool(b.root))


@pytest.mark.parametrize("at", [5000, 10**12])
def test_time_travel_far_past_the_end_is_refused(tmp_path: Path, at: int) -> None:
    b, _ = build(tmp_path)
    got, requests = asyncio.run(_pool(b.root, at=at))
    assert isinstance(got, LakeError) and requests < 20


def test_a_store_that_cannot_list_probes_the_last_entry(tmp_path: Path,
                                                        monkeypatch: pytest.MonkeyPatch) -> None:
    b, p = build(tmp_path)
    (b.root / p.dir / "branches" / "HEAD").write_bytes(b"100000")

    async def cannot_list(self: LakeIO, rel: str) -> list[str]:
        raise LakeError("store http cannot list objects", path=self.display(rel))

    monkeypatch.setattr(LakeIO, "list", cannot_list)
    got, requests = asyncio.run(_pool(b.root))
    assert isinstance(got, LakeError) and "100000" in str(got) and requests < 20


def test_a_long_real_journal_still_reads(tmp_path: Path) -> None:
    """More entries than LIST_ABOVE, and HEAD lagging two entries behind them."""
    b, p = build(tmp_path)
    commit = b.branches[(p.dir, "main")]
    for _ in range(LIST_ABOVE + 10):
        b.set_branch(p, "main", commit)
    b.set_branch(p, "main", commit, write_head=False)
    b.set_branch(p, "main", commit, write_head=False)
    got, _ = asyncio.run(_pool(b.root))
    assert not isinstance(got, LakeError), got
    assert got.journal_id == LIST_ABOVE + 14 and len(got.objects) == 1


def test_the_limit_is_an_option(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    b, _ = build(tmp_path)  # branch journal: 1 adds main, 2 loads
    got, _ = asyncio.run(_pool(b.root, max_journal_entries=1))
    assert isinstance(got, LakeError) and "limit of 1 " in str(got)
    got, _ = asyncio.run(_pool(b.root, max_journal_entries=2))
    assert not isinstance(got, LakeError)
    code = main(["lake", "ls", str(b.root), "--pool", "logs", "--max-journal-entries", "1"])
    err = capsys.readouterr().err
    assert code != 0 and "--max-journal-entries" in err and len(err.splitlines()) == 1
    with pytest.raises(Exception, match="max_journal_entries"):
        asyncio.run(_pool(b.root, max_journal_entries=0))
