"""One check of ``take``'s row indices for every face (issue #39, item 13): a Reader,
a Dataset, their sync twins and a whole-object (BSUP) reader refuse the same indices
with the same RowSelectionError, an index past int64 (>= 2**63) included."""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import csup_async
from csup_async import RowSelectionError

BSUP = Path(__file__).resolve().parents[2] / "data" / "real" / "zed1.12-all.zng"
BAD: list[Any] = [[2**63], [2**64 + 5], [-1], [1.0], [True], "01", 3,
                  np.array([[0]]), np.array([0.5])]


@pytest.fixture(scope="module")
def path(tmp_path_factory: pytest.TempPathFactory) -> str:
    p = str(tmp_path_factory.mktemp("take") / "t.csup")
    csup_async.write(p, [{"i": i} for i in range(10)])
    return p


def _faces(path: str) -> dict[str, Any]:
    async def reader(idx: Any) -> Any:
        async with csup_async.open(path) as r:
            return await r.take(idx)

    async def dataset(idx: Any) -> Any:
        async with csup_async.open_dataset([path, path]) as ds:
            return await ds.take(idx)

    def sync_reader(idx: Any) -> Any:
        with csup_async.open_sync(path) as r:
            return r.take(idx)

    def sync_dataset(idx: Any) -> Any:
        with csup_async.open_dataset_sync([path]) as ds:
            return ds.take(idx)

    def bsup(idx: Any) -> Any:
        with csup_async.open_sync(str(BSUP)) as r:
            return r.take(idx)

    return {"reader": lambda i: asyncio.run(reader(i)),
            "dataset": lambda i: asyncio.run(dataset(i)),
            "sync_reader": sync_reader, "sync_dataset": sync_dataset, "bsup": bsup}


@pytest.mark.parametrize("face", ["reader", "dataset", "sync_reader", "sync_dataset", "bsup"])
@pytest.mark.parametrize("bad", BAD, ids=lambda b: repr(b)[:20])
def test_every_face_refuses_the_same_indices(path: str, face: str, bad: Any) -> None:
    with pytest.raises(RowSelectionError):
        _faces(path)[face](bad)


def test_an_index_past_int64_names_itself(path: str) -> None:
    for face in _faces(path).values():
        with pytest.raises(RowSelectionError, match=str(2**63)):
            face([0, 2**63])


@settings(max_examples=30, deadline=None)
@given(idx=st.lists(st.integers(-2**65, 2**65), max_size=4))
def test_indices_are_checked_alike_everywhere(idx: list[int]) -> None:
    """Any list of ints: the Reader and the Dataset both refuse it or both give its rows."""
    import tempfile

    with tempfile.TemporaryDirectory() as d:
        p = str(Path(d) / "t.csup")
        csup_async.write(p, [{"i": i} for i in range(10)])
        faces = _faces(p)
        outcomes = []
        for name in ("sync_reader", "sync_dataset"):
            try:
                outcomes.append(faces[name](idx).to_pylist())
            except RowSelectionError:
                outcomes.append("refused")
        assert outcomes[0] == outcomes[1]
        assert (outcomes[0] == "refused") == (any(i < 0 or i >= 10 for i in idx))
