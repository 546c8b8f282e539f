"""``csup_async.open`` reads BSUP (ZNG) objects: detected by content, read whole, the same
verbs as any reader, values exactly as the BSUP codec and zq give them."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import csup_async
from csup_async import arrays as A
from csup_async.format.bsup import StreamEncoder, encode_stream, read_values, stream_shape
from csup_async.model.errors import FormatError, LimitError
from csup_async.model.types import Field, PrimitiveType, RecordType, Type
from csup_async.model.values import Value, strip_unions, unify
from csup_async.readers.bsup import BsupReader
from tests.support.strategies import typed_values
from tests.support.zedjson import load_lines, zed_json

REAL = Path(__file__).resolve().parents[2] / "data" / "real"
LAKE_DATA = sorted((REAL / "lake").glob("*/data/*[!k].zng"))  # data objects, not -seek

CASES = [
    ("zed1.12-all.zng", "zed1.12-all.json", False),
    ("zed1.12-all-uncompressed.zng", "zed1.12-all.json", False),
    ("zed1.7-all.zng", "zed1.7-all.json", True),
]

INT64 = PrimitiveType("int64", 9)
STRING = PrimitiveType("string", 25)
ROW = RecordType((Field("n", INT64), Field("s", STRING)))


def _same(values: list[Value]) -> list[tuple[Type, str]]:
    """Values to compare (repr: a NaN equals itself there)."""
    return [(v.type, repr(v.value)) for v in values]


def _at(v: Any, comps: tuple[str, ...]) -> Any:
    for c in comps:
        if not isinstance(v, dict):
            return None
        v = v.get(c)
    return v


def _type_at(t: Type, comps: tuple[str, ...]) -> Type | None:
    for c in comps:
        u = t
        while hasattr(u, "inner") and not isinstance(u, RecordType):
            u = u.inner
        if not isinstance(u, RecordType) or u.field(c) is None:
            return None
        t = u.field(c).type  # type: ignore[union-attr]
    return t


def _expected_column(values: list[Value], path: str) -> list[Any]:
    """A column as the codec's values give it: the field's values put in an array of the
    unified type of the rows that have it (the array's Python form)."""
    comps = tuple(path.split(".")) if path else ()
    types = [t for v in values if (t := _type_at(v.type, comps)) is not None]
    ut = unify(list(dict.fromkeys(types)))
    return A.from_pylist(ut, [_at(v.value, comps) for v in values]).to_pylist()


@pytest.mark.parametrize(("name", "expected", "map_as_records"), CASES)
async def test_a_zq_written_zng_opens_and_reads_as_zq_prints_it(
        name: str, expected: str, map_as_records: bool) -> None:
    data = (REAL / name).read_bytes()
    async with csup_async.open(str(REAL / name)) as r:
        assert isinstance(r, BsupReader)
        got = await r.read_values()
        rows = await r.read_rows()
        assert r.num_rows == await r.count_rows() == len(got)
        assert "super type" in str(r.schema)
    codec = read_values(data)
    assert _same(got) == _same(codec)
    assert repr(rows) == repr([strip_unions(v.value) for v in codec])
    want = load_lines(REAL / expected)
    assert [zed_json(v.type, v.value, map_as_records=map_as_records) for v in got] == want


@pytest.mark.parametrize("name", ["zed1.12-all.zng", "zed1.7-all.zng"])
async def test_scan_columns_are_the_codecs_values(name: str) -> None:
    codec = read_values((REAL / name).read_bytes())
    async with csup_async.open(str(REAL / name)) as r:
        res = await r.scan()
        nested = await r.scan(["rec.x", "rec.deep.z", "s"])
        batches = [b async for b in r.iter_batches(["i64"], batch_rows=100)]
    assert res.num_rows == len(codec) == 362
    assert "" in res.columns  # top-level scalars among the records
    for path in ("i64", "s", "ts", "rec", "u", ""):
        assert res.columns[path].to_pylist() == _expected_column(codec, path), path
    for path in ("rec.x", "rec.deep.z", "s"):
        assert nested.columns[path].to_pylist() == _expected_column(codec, path), path
    assert [b.num_rows for b in batches] == [100, 100, 100, 62]
    joined = [x for b in batches for x in b.columns["i64"].to_pylist()]
    assert joined == _expected_column(codec, "i64")


async def test_filter_is_exact_and_limit_and_rows_select() -> None:
    name = str(REAL / "zed1.12-all.zng")
    codec = read_values((REAL / "zed1.12-all.zng").read_bytes())
    i64 = _expected_column(codec, "i64")
    s = _expected_column(codec, "s")
    want = [(a, b) for a, b in zip(i64, s, strict=True) if a is not None and a > 10**12]
    async with csup_async.open(name) as r:
        res = await r.scan(["s"], filter="i64 > 1000000000000")
        first = await r.scan(["s"], filter="i64 > 1000000000000", limit=4)
        head = await r.scan(["i64"], limit=7)
        mid = await r.scan(["i64"], rows=slice(10, 20))
        took = await r.take([5, 0, 361], ["i64"])
    assert 0 < len(want) < len(codec)
    assert list(res.columns) == ["s"]
    assert res.columns["s"].to_pylist() == [b for _, b in want]
    assert first.columns["s"].to_pylist() == [b for _, b in want][:4]
    assert head.columns["i64"].to_pylist() == i64[:7]
    assert mid.columns["i64"].to_pylist() == i64[10:20]
    assert took.columns["i64"].to_pylist() == [i64[5], i64[0], i64[361]]


@pytest.mark.parametrize("path", LAKE_DATA, ids=lambda p: p.name)
async def test_a_lake_data_object_opens_column_wise_as_its_values(path: Path) -> None:
    """The lake's objects are records of a few types: read by the column-wise path, which
    agrees with the value-by-value one (``limit=``) and with the codec."""
    codec = read_values(path.read_bytes())
    async with csup_async.open(str(path)) as r:
        whole = await r.scan()
        cut = await r.scan(limit=len(codec))  # value by value (stops at the limit)
    assert whole.num_rows == len(codec) > 0
    assert list(whole.columns) == list(cut.columns)
    for c in whole.columns:
        assert whole.columns[c].to_pylist() == cut.columns[c].to_pylist() == (
            _expected_column(codec, c)), c


def test_lake_data_objects_exist() -> None:
    assert len(LAKE_DATA) >= 3


async def test_a_big_object_is_read_whole_past_the_tail(tmp_path: Path) -> None:
    """An object larger than the tail read: the rest is fetched, nothing is lost."""
    values = [(ROW, {"n": i, "s": f"value number {i} " * 3}) for i in range(60_000)]
    p = tmp_path / "big.bin"  # no suffix: content alone decides
    p.write_bytes(encode_stream(values, compress=False))
    async with csup_async.open(str(p)) as r:
        assert isinstance(r, BsupReader)
        assert r.open_stats.requests >= 2
        res = await r.scan(["n"], filter="n >= 59990")
        assert r.num_rows == 60_000
    assert res.columns["n"].to_pylist() == list(range(59_990, 60_000))


async def test_limit_stops_decoding_before_a_bad_value_at_the_end(tmp_path: Path) -> None:
    """A body that does not decode (a string that is not UTF-8) in the last row: a scan
    with a limit never reaches it; a whole scan names the path."""
    values = [(ROW, {"n": i, "s": "ok"}) for i in range(1000)] + [(ROW, {"n": 1000,
                                                                          "s": "zz"})]
    data = encode_stream(values, compress=False)
    bad = data.rindex(b"zz")
    p = tmp_path / "bad.zng"
    p.write_bytes(data[:bad] + b"\xff\xfe" + data[bad + 2:])
    async with csup_async.open(str(p)) as r:
        res = await r.scan(["s"], limit=10)
        assert res.columns["s"].to_pylist() == ["ok"] * 10
        with pytest.raises(FormatError, match=r"bad\.zng"):
            await r.scan(["s"])


@pytest.mark.parametrize("cut", [0.5, 0.97])
async def test_a_truncated_zng_is_a_format_error_naming_the_path(tmp_path: Path,
                                                                 cut: float) -> None:
    data = (REAL / "zed1.12-all.zng").read_bytes()
    p = tmp_path / "cut-short.zng"
    p.write_bytes(data[: int(len(data) * cut)])
    with pytest.raises(FormatError, match=r"cut-short\.zng: .*runs past") as e:
        async with csup_async.open(str(p)) as r:
            await r.read_values()
    assert "trailer" not in str(e.value)  # its name says BSUP: the BSUP error


async def test_a_truncated_stream_without_a_bsup_name_keeps_the_trailer_error(
        tmp_path: Path) -> None:
    """Unnamed, an object is BSUP only when it is a whole stream: a damaged CSUP or VNG
    file may start like a frame, so the error stays the CSUP reader's."""
    data = (REAL / "zed1.12-all.zng").read_bytes()
    p = tmp_path / "cut-short"
    p.write_bytes(data[: len(data) // 2])
    with pytest.raises(FormatError, match=r"cut-short: .*trailer"):
        await csup_async.open(str(p))


async def test_a_corrupt_start_named_zng_says_it_is_neither_format(tmp_path: Path) -> None:
    p = tmp_path / "junk.zng"
    p.write_bytes(b"\xf3" + (REAL / "zed1.12-all.zng").read_bytes()[1:])  # version bit set
    with pytest.raises(FormatError) as e:
        await csup_async.open(str(p))
    assert "nor a BSUP stream" in str(e.value) and "junk.zng" in str(e.value)


async def test_other_bytes_keep_the_csup_error(tmp_path: Path) -> None:
    """Bytes that start no BSUP stream, under a name that does not say BSUP: the error is
    the CSUP reader's (no trailer), not a BSUP one."""
    p = tmp_path / "junk.csup"
    p.write_bytes(b"\xf3" * 5000)
    with pytest.raises(FormatError) as e:
        await csup_async.open(str(p))
    assert "nor a BSUP stream" not in str(e.value)


@pytest.mark.parametrize("data", [b"", b"\xff", b"\xff\xff"])
async def test_an_empty_zng_has_no_rows(tmp_path: Path, data: bytes) -> None:
    p = tmp_path / "empty.zng"
    p.write_bytes(data)
    async with csup_async.open(str(p)) as r:
        assert isinstance(r, BsupReader)
        assert await r.read_rows() == []
        assert (await r.scan()).num_rows == 0


async def test_end_markers_alone_without_a_bsup_name_are_not_bsup(tmp_path: Path) -> None:
    """Nothing in them says BSUP (no type, no value): the CSUP reader's error stands."""
    p = tmp_path / "markers.csup"
    p.write_bytes(b"\xff" * 8192)
    with pytest.raises(FormatError, match="trailer"):
        await csup_async.open(str(p))


async def test_over_http_the_object_is_read_in_ranges(range_server: Any) -> None:
    data = (REAL / "zed1.12-all.zng").read_bytes()
    url = range_server.url(range_server.put("bsup/all.zng", data))
    async with csup_async.open(url) as r:
        got = await r.read_values()
    assert _same(got) == _same(read_values(data))


@settings(max_examples=60, deadline=None)
@given(st.lists(typed_values, max_size=12), st.booleans(), st.integers(1, 64))
def test_stream_shape_agrees_with_the_codec(values: list[tuple[Type, Any]], compress: bool,
                                            frame_size: int) -> None:
    """The open's frame walk finds the values and types ``read_values`` decodes, in any
    framing (small frames split values over many)."""
    out = bytearray()
    enc = StreamEncoder(out, compress=compress, frame_size=frame_size)
    for t, v in values:
        enc.write(t, v)
    enc.end_stream()
    codec = read_values(bytes(out))
    types, n = stream_shape(bytes(out))
    assert n == len(codec) == len(values)
    assert types == list(dict.fromkeys(v.type for v in codec))
    if n:
        with pytest.raises(FormatError):
            stream_shape(bytes(out)[:-2])  # the end marker and a byte of the last frame gone


async def test_max_rows_refuses_a_longer_stream_at_the_open() -> None:
    with pytest.raises(LimitError, match=r"zed1\.12-all\.zng: .*max_rows=100"):
        await csup_async.open(str(REAL / "zed1.12-all.zng"), max_rows=100)


async def test_the_schema_gives_the_arrow_schema_of_a_scan() -> None:
    path = LAKE_DATA[0]
    async with csup_async.open(str(path)) as r:
        res = await r.scan()
        schema = r.schema.arrow()
    import pyarrow as pa

    assert pa.schema(schema) == res.to_arrow().schema
