"""What the writer refuses, and how: an EncodeError naming the problem, no file.

Each input here used to be written wrongly or to escape as another exception:
duplicate field names, a mapping of columns read as rows, complex numbers,
times beyond int64 nanoseconds wrapped silently, surrogates in names, Arrow
times beyond nanoseconds, invalid UTF-8 in an Arrow string column.  The writer
never finishes a file it cannot read back.
"""

from __future__ import annotations

import asyncio
import io
import threading
from pathlib import Path
from typing import Any

import numpy as np
import pytest

import csup_async
from csup_async import EncodeError
from csup_async.model.types import (
    INT64,
    STRING,
    TIME,
    EnumType,
    Field,
    NamedType,
    RecordType,
)
from csup_async.model.values import Value

pa = pytest.importorskip("pyarrow")


def _refused(tmp_path: Path, data: Any, match: str) -> None:
    """EncodeError for ``data``, from a file object and from a path (which is left
    without a file or a temporary)."""
    with pytest.raises(EncodeError, match=match):
        csup_async.write(io.BytesIO(), data)
    dest = tmp_path / "out.csup"
    with pytest.raises(EncodeError, match=match):
        csup_async.write(dest, data)
    assert list(tmp_path.iterdir()) == []
    assert not [t for t in threading.enumerate() if t.name.startswith("csup-writer")]


async def _rows(path: Path) -> list[Any]:
    async with csup_async.open(str(path)) as r:
        return await r.read_rows()


# ---------------------------------------------------- duplicate names (2) ---

def test_a_record_type_with_a_duplicate_field_name_is_refused(tmp_path: Path) -> None:
    dup = RecordType((Field("i", STRING), Field("i", INT64)))
    _refused(tmp_path, [Value(dup, {"i": "x"})], "field name 'i' twice")


def test_an_arrow_struct_with_duplicate_field_names_is_refused(tmp_path: Path) -> None:
    inner = pa.StructArray.from_arrays([pa.array(["a"]), pa.array([1])], names=["i", "i"])
    _refused(tmp_path, pa.table({"s": inner}), "field name 'i' twice")
    top = pa.Table.from_arrays([pa.array(["a"]), pa.array([1])], names=["i", "i"])
    _refused(tmp_path, top, "field name 'i' twice")


# ------------------------------------------------- mappings, complex (5) ---

async def test_a_mapping_of_numpy_arrays_is_written_as_columns(tmp_path: Path) -> None:
    dest = tmp_path / "cols.csup"
    n = csup_async.write(dest, {"a": np.arange(3), "b": np.array([0.5, 1.5, 2.5])})
    assert n == 3
    assert await _rows(dest) == [{"a": 0, "b": 0.5}, {"a": 1, "b": 1.5}, {"a": 2, "b": 2.5}]


def test_complex_numbers_are_refused_clearly(tmp_path: Path) -> None:
    cols = {"a": np.array([1 + 2j, 3j]), "b": np.arange(2)}
    _refused(tmp_path, cols, "column 'a'.*complex numbers have no super type")
    _refused(tmp_path, [{"z": 1 + 2j}], "complex")
    _refused(tmp_path, [{"z": np.complex128(1j)}], "complex")


def test_a_mapping_that_is_not_columns_is_refused(tmp_path: Path) -> None:
    _refused(tmp_path, {"a": 1, "b": 2}, "pass a list of rows")
    _refused(tmp_path, {"a": [1, 2]}, "pass a list of rows")


# ------------------------------------------- numpy times beyond ns (6) ---

@pytest.mark.parametrize("value", [
    np.datetime64("100000-01-01"), np.datetime64("-3000-01-01"),
    np.datetime64("2300-01-01T00:00:00", "s"), np.timedelta64(10**6, "D"),
])
def test_numpy_times_beyond_nanoseconds_are_refused(tmp_path: Path, value: Any) -> None:
    _refused(tmp_path, [{"t": value}], "outside the (time|duration) range")
    _refused(tmp_path, [{"t": value}] * 3000, "outside the (time|duration) range")
    kind = TIME if isinstance(value, np.datetime64) else csup_async.model.types.DURATION
    _refused(tmp_path, [Value(RecordType((Field("t", kind),)), {"t": value})], "outside")
    _refused(tmp_path, {"t": np.array([value, value])}, "outside the (time|duration) range")


async def test_numpy_times_in_range_keep_their_value(tmp_path: Path) -> None:
    """Coarse units and NaT convert exactly, from rows and from columns."""
    values = [np.datetime64("2261-12-31", "D"), np.datetime64("1678-01-01", "D"),
              np.datetime64("NaT", "s")]
    dest = tmp_path / "t.csup"
    csup_async.write(dest, [{"t": v} for v in values])
    got = [r["t"] for r in await _rows(dest)]
    assert got[:2] == [v.astype("datetime64[ns]") for v in values[:2]] and np.isnat(got[2])
    csup_async.write(dest, {"t": np.array(values[:2])})
    assert [r["t"] for r in await _rows(dest)] == got[:2]


# ------------------------------------------------ names and Arrow (9) ---

def test_surrogates_in_names_are_refused(tmp_path: Path) -> None:
    bad = "a\udc80"
    _refused(tmp_path, [{bad: 1}], "field name")
    _refused(tmp_path, [{"x": {bad: 1}}], "field name")
    _refused(tmp_path, [Value(EnumType(("ok", bad)), "ok")], "enum symbol")
    _refused(tmp_path, [Value(NamedType(bad, INT64), 1)], "type name")
    _refused(tmp_path, [{"s": bad}], "not encodable as UTF-8")


@pytest.mark.parametrize("arr", [
    pa.array([10**12], pa.timestamp("s")), pa.array([-(10**12)], pa.timestamp("s")),
    pa.array([10**16], pa.duration("ms")),
    pa.array([[10**12]], pa.list_(pa.timestamp("s"))),
])
def test_arrow_times_beyond_nanoseconds_are_refused(tmp_path: Path, arr: Any) -> None:
    _refused(tmp_path, pa.table({"t": arr}), "out of bounds|overflow")


async def test_nested_arrow_times_are_converted_to_nanoseconds(tmp_path: Path) -> None:
    """A list<timestamp[s]> is scaled like a timestamp[s] column, not reinterpreted."""
    t = pa.table({"l": pa.array([[1, None]], pa.list_(pa.timestamp("s")))})
    dest = tmp_path / "l.csup"
    csup_async.write(dest, t)
    assert (await _rows(dest))[0]["l"] == [np.datetime64(1, "s").astype("datetime64[ns]"), None]


def test_an_arrow_string_column_with_invalid_utf8_is_refused(tmp_path: Path) -> None:
    data = b"ok\xff\xfe"
    bad = pa.Array.from_buffers(pa.string(), 2, [None, pa.py_buffer(
        np.array([0, 2, 4], np.int32).tobytes()), pa.py_buffer(data)])
    _refused(tmp_path, pa.table({"s": bad}), "invalid UTF-8")
    nested = pa.StructArray.from_arrays([bad], names=["s"])
    _refused(tmp_path, pa.table({"r": nested}), "invalid UTF-8")


# ------------------------------------------ two writers to one path (10) ---

def _write_one(dest: str, marker: int) -> int:
    return csup_async.write(dest, [{"writer": marker, "i": i, "pad": "x" * 50}
                                   for i in range(20_000)], segment_thresh=4096)


def test_two_writers_to_one_path_leave_one_whole_file(tmp_path: Path) -> None:
    """Each writer has its own temporary; the later rename wins; nothing is lost and
    no temporary is left behind."""
    from concurrent.futures import ProcessPoolExecutor

    dest = str(tmp_path / "same.csup")
    for _ in range(3):
        with ProcessPoolExecutor(2) as pool:
            done = list(pool.map(_write_one, [dest, dest], [1, 2]))
        assert done == [20_000, 20_000]
        rows = asyncio.run(_rows(Path(dest)))
        assert len(rows) == 20_000 and rows[-1]["i"] == 19_999
        assert len({r["writer"] for r in rows}) == 1
        assert [p.name for p in tmp_path.iterdir()] == ["same.csup"]


def test_threads_writing_one_path_each_use_their_own_temporary(tmp_path: Path) -> None:
    dest = str(tmp_path / "same.csup")
    errors: list[BaseException] = []

    def run(marker: int) -> None:
        try:
            _write_one(dest, marker)
        except BaseException as e:
            errors.append(e)

    threads = [threading.Thread(target=run, args=(k,)) for k in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    rows = asyncio.run(_rows(Path(dest)))
    assert len(rows) == 20_000 and len({r["writer"] for r in rows}) == 1
    assert [p.name for p in tmp_path.iterdir()] == ["same.csup"]
