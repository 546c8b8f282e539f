"""Segment checks on every read: crc32 before decompression, count after decoding.

docs/format.md ("Segment statistics and checksums"): a segment's ``crc32`` is the
CRC-32 of its stored bytes and ``count`` the values it decodes to; a reader
checks both.  Each test corrupts one segment of a file our writer made (or
patches a statistic in the reassembly section, re-encoded with the BSUP codec)
and reads it the way a user would: every read path, a dataset, a real HTTP
server, the CLI and Spark.  The error must name the file, the column and the
segment (its index in the segmap and its offset).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.format.bsup import StreamEncoder, decode_value, iter_raw_values
from csup_async.format.colvalue import TRAILER_TYPE
from csup_async.format.csup import find_trailer
from csup_async.format.meta import Segment
from csup_async.model.errors import ColumnNotFoundError, FormatError
from csup_async.model.values import Value
from csup_async.scan.checks import iter_labelled_segmaps
from csup_async.spark.options import parse_options
from tests.support.checksum_files import (
    GOOD,
    PLAIN,
    ROWS,
    file_meta,
    find_segment,
    flip_byte,
    sample_rows,
    sample_table,
    small_segments_csup,
)

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")



def _named(e: BaseException, path: str, label: str, index: int, n: int, seg: Segment) -> None:
    text = str(e)
    assert path in text
    assert label in text
    assert f"segment {index} of {n} at offset {seg.offset}" in text


def _run(coro: Any) -> Any:
    return asyncio.run(coro)


# ------------------------------------------------------------ read paths ---
async def _read(url: str, how: str, column: str = "", **opts: Any) -> Any:
    async with csup_async.open(url, **opts) as r:
        if how == "scan":
            return await r.scan()
        if how == "scan-projection":  # the corrupt column's top-level field alone
            return await r.scan([column.split(".")[0].split("[")[0]])
        if how == "iter_batches":
            return [b async for b in r.iter_batches(batch_rows=500)]
        if how == "read_rows":
            return await r.read_rows()
        raise AssertionError(how)


ROLES = [('column "name" (values', GOOD), ('column "id" (values', GOOD),
         ('column "rec.x" (presence', GOOD), ('column "tags" (lengths', GOOD),
         ('column "tags[]" (values', GOOD), ('column "rec.tag" (values', PLAIN)]


@pytest.mark.parametrize("how", ["scan", "scan-projection", "iter_batches", "read_rows"])
@pytest.mark.parametrize("role,data", ROLES, ids=[r[0].split('"')[1] + "/" + r[0][-7:]
                                                  for r in ROLES])
def test_a_corrupt_segment_is_named_on_every_read_path(tmp_path: Path, how: str, role: str,
                                                       data: bytes) -> None:
    label, index, n, seg = find_segment(data, role)
    path = tmp_path / "bad.csup"
    path.write_bytes(flip_byte(data, seg))
    with pytest.raises(FormatError, match="checksum mismatch") as got:
        _run(_read(str(path), how, label.split('"')[1]))
    _named(got.value, str(path), label, index, n, seg)


def test_the_crc_is_checked_before_decompression(tmp_path: Path) -> None:
    """A corrupt LZ4 block header would make the decompressor fail (or not) on its own
    terms; the checksum speaks first, whatever the bytes would have decompressed to."""
    label, index, n, seg = find_segment(GOOD, 'column "name" (values')
    assert seg.compression  # an LZ4 segment
    path = tmp_path / "lz4.csup"
    path.write_bytes(flip_byte(GOOD, seg, at=0))
    with pytest.raises(FormatError, match="checksum mismatch") as got:
        _run(_read(str(path), "scan"))
    _named(got.value, str(path), label, index, n, seg)


def test_verify_off_reads_the_bytes_as_they_are(tmp_path: Path) -> None:
    """verify_checksums=False: an uncompressed int64 segment with one flipped bit
    decodes to a different value, silently (what the check is there to catch)."""
    seg = find_segment(PLAIN, 'column "id" (values')[3]
    path = tmp_path / "bad.csup"
    path.write_bytes(flip_byte(PLAIN, seg, at=seg.length - 1))  # a value's body, not a tag
    with pytest.raises(FormatError, match="checksum mismatch"):
        _run(_read(str(path), "scan"))
    res = _run(_read(str(path), "scan", verify_checksums=False))
    good = [r["id"] for r in sample_rows()]
    got = res.columns["id"].to_pylist()
    assert len(got) == len(good) and sum(a != b for a, b in zip(got, good, strict=True)) == 1


def test_files_without_statistics_read_without_checks(tmp_path: Path) -> None:
    data = small_segments_csup(sample_table(sample_rows()), compress=False, statistics=False)
    meta = file_meta(data)
    assert all(s.crc32 is None and s.count is None
               for _, m in iter_labelled_segmaps(meta) for s in m)
    _label, _i, _n, seg = find_segment(data, 'column "id" (values')
    path = tmp_path / "nostats.csup"
    path.write_bytes(flip_byte(data, seg, at=seg.length - 1))
    res = _run(_read(str(path), "scan"))  # nothing to check against: read as stored
    assert res.num_rows == ROWS
    out = subprocess.run([sys.executable, "-m", "csup_async.cli", "inspect", str(path)],
                         capture_output=True, text=True, check=True)
    assert "no statistics" in out.stdout


# ---------------------------------------------------------------- counts ---
def _patch_count(data: bytes, seg: Segment, delta: int) -> bytes:
    """The file with ``seg``'s count statistic off by ``delta``: the reassembly section
    decoded and re-encoded with the BSUP codec, the trailer rewritten to match."""
    t = find_trailer(data[-4096:], len(data))
    section = data[t.data_size: t.data_size + t.reassembly_size]
    done = []

    def patch(v: Any) -> None:
        if isinstance(v, Value):
            patch(v.value)
        elif isinstance(v, dict):
            if v.get("offset") == seg.offset and "count" in v and not done:
                v["count"] += delta
                done.append(v)
            for x in v.values():
                patch(x)
        elif isinstance(v, list):
            for x in v:
                patch(x)

    out = bytearray()
    enc = StreamEncoder(out)
    for ty, body in iter_raw_values(section):
        if body is None:
            enc.write_body(ty, None)
            continue
        v = decode_value(ty, body, typed=True)
        patch(v)
        enc.write(ty, v)
    enc.end_stream()
    assert done, "segment not found in the reassembly section"
    trailer = bytearray()
    tenc = StreamEncoder(trailer, compress=False)
    tenc.write(TRAILER_TYPE, {"magic": t.magic, "type": "csup", "version": t.version,
                              "sections": [t.data_size, len(out)],
                              "meta": {"skew_thresh": t.skew_thresh,
                                       "segment_thresh": t.segment_thresh}})
    tenc.end_stream()
    return data[: t.data_size] + bytes(out) + bytes(trailer)


@pytest.mark.parametrize("role", ['column "name" (values', 'column "rec.x" (presence',
                                  'column "tags" (lengths'])
@pytest.mark.parametrize("verify", [True, False])
def test_a_count_that_disagrees_with_the_segment_is_a_format_error(
        tmp_path: Path, role: str, verify: bool) -> None:
    label, index, n, seg = find_segment(GOOD, role)
    path = tmp_path / "count.csup"
    path.write_bytes(_patch_count(GOOD, seg, +1))
    assert find_segment(path.read_bytes(), role)[3].count == seg.count + 1  # type: ignore[operator]
    with pytest.raises(FormatError, match="count statistic") as got:
        _run(_read(str(path), "scan", verify_checksums=verify))
    _named(got.value, str(path), label, index, n, seg)


# ---------------------------------------------------------- other paths ---
def test_datasets_name_the_corrupt_file(tmp_path: Path) -> None:
    label, index, n, seg = find_segment(GOOD, 'column "name" (values')
    (tmp_path / "a.csup").write_bytes(GOOD)
    (tmp_path / "b.csup").write_bytes(flip_byte(GOOD, seg))

    async def scan(**opts: Any) -> Any:
        async with csup_async.open_dataset(str(tmp_path) + "/", **opts) as ds:
            return await ds.scan(["id", "name"])

    with pytest.raises(FormatError, match="checksum mismatch") as got:
        _run(scan())
    _named(got.value, str(tmp_path / "b.csup"), label, index, n, seg)
    assert _run(scan(verify_checksums=False)).num_rows == 2 * ROWS


def test_over_http_every_path_checks(range_server: Any) -> None:
    label, index, n, seg = find_segment(GOOD, 'column "rec.x" (values')
    range_server.put("bad.csup", flip_byte(GOOD, seg))
    url = range_server.url("bad.csup")
    for how in ("scan", "iter_batches", "read_rows"):
        with pytest.raises(FormatError, match="checksum mismatch") as got:
            _run(_read(url, how))
        _named(got.value, url, label, index, n, seg)
    assert _run(_read(url, "scan", verify_checksums=False)).num_rows == ROWS


def test_cli_scan_fails_and_no_verify_reads(tmp_path: Path) -> None:
    label, index, n, seg = find_segment(PLAIN, 'column "id" (values')
    path = tmp_path / "bad.csup"
    path.write_bytes(flip_byte(PLAIN, seg, at=seg.length - 1))
    cmd = [sys.executable, "-m", "csup_async.cli", "scan", str(path), "-c", "id",
           "--format", "json"]
    bad = subprocess.run(cmd, capture_output=True, text=True)
    assert bad.returncode != 0
    assert "checksum mismatch" in bad.stderr and label in bad.stderr
    assert f"segment {index} of {n} at offset {seg.offset}" in bad.stderr
    ok = subprocess.run([*cmd, "--no-verify"], capture_output=True, text=True, check=True)
    assert len(ok.stdout.splitlines()) == ROWS


def test_spark_option_turns_the_check_off() -> None:
    assert "verify_checksums" not in parse_options({"path": "x"}).reader_options()
    s = parse_options({"path": "x", "verifyChecksums": "false"})
    assert s.reader_options()["verify_checksums"] is False


# --------------------------------------------------------------- inspect ---
def _cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-m", "csup_async.cli", *args],
                          capture_output=True, text=True)


def test_inspect_verify_exit_codes_and_every_failure(tmp_path: Path) -> None:
    good = tmp_path / "good.csup"
    good.write_bytes(GOOD)
    out = _cli("inspect", "--verify", str(good))
    assert out.returncode == 0, out.stderr
    assert "ok," in out.stdout and 'column "name" (values, super type 0)' in out.stdout
    first = find_segment(GOOD, 'column "name" (values', 1)
    second = find_segment(GOOD, 'column "tags" (lengths', 2)
    bad = tmp_path / "bad.csup"
    bad.write_bytes(flip_byte(flip_byte(GOOD, first[3]), second[3]))
    out = _cli("inspect", "--verify", str(bad))
    assert out.returncode == 4  # invalid data, as a scan of the file exits
    errors = [ln for ln in out.stdout.splitlines() if ln.startswith("error:")]
    assert len(errors) == 2  # every failure, not the first
    for label, index, n, seg in (first, second):
        assert any(label in e and f"segment {index} of {n} at offset {seg.offset}" in e
                   for e in errors)
    doc = json.loads(_cli("inspect", "--verify", "--json", str(bad)).stdout)
    assert doc["verify"]["ok"] is False and len(doc["verify"]["errors"]) == 2
    # a projection-independent check: the super column and every stream are listed
    assert sum(c["segments"] for c in doc["verify"]["columns"]) == sum(
        len(m) for _, m in iter_labelled_segmaps(file_meta(GOOD)))


def test_inspect_verify_a_count_mismatch_over_http(range_server: Any) -> None:
    label, _index, _n, seg = find_segment(GOOD, 'column "id" (values')
    range_server.put("count.csup", _patch_count(GOOD, seg, -1))
    out = _cli("inspect", "--verify", range_server.url("count.csup"))
    assert out.returncode == 4
    assert "count statistic" in out.stdout and label in out.stdout
    range_server.put("good.csup", GOOD)
    assert _cli("inspect", "--verify", range_server.url("good.csup")).returncode == 0


def _expected_stats(values: list[Any]) -> tuple[int, int, Any, Any]:
    present = [v for v in values if v is not None]
    return len(values), len(values) - len(present), min(present), max(present)


def test_inspect_and_schema_show_column_statistics(tmp_path: Path) -> None:
    path = tmp_path / "s.csup"
    path.write_bytes(GOOD)
    rows = sample_rows()

    async def schema() -> Any:
        async with csup_async.open(str(path)) as r:
            return r.schema

    sch = _run(schema())
    assert sch.has_statistics
    stats = sch.column_stats
    for name, values in (("id", [r["id"] for r in rows]), ("name", [r["name"] for r in rows]),
                         ("rec.tag", [r["rec"]["tag"] for r in rows])):
        st = sch.stats(name)
        assert st is stats[name]
        assert (st.values, st.nulls, st.min, st.max) == _expected_stats(values)
    x = [r["rec"]["x"] for r in rows if r["rec"]["x"] is not None]
    st = sch.stats("rec.x")
    assert (st.min, st.max, st.nan) == (min(x), max(x), False)
    assert st.values is not None and st.values >= len(x)
    assert sch.stats("tags[]").values == sum(len(r["tags"]) for r in rows)
    with pytest.raises(ColumnNotFoundError):
        sch.stats("nope")
    text = _cli("inspect", str(path)).stdout
    line = next(ln for ln in text.splitlines() if ln.split()[:2] == ["id", "int64"])
    assert f"{ROWS:,}" in line and str(min(r["id"] for r in rows)) in line
    doc = json.loads(_cli("inspect", "--json", str(path)).stdout)
    assert doc["statistics"] is True and doc["rows"] == ROWS
    assert doc["columns"]["id"]["min"] == min(r["id"] for r in rows)
    assert doc["columns"]["name"]["max"] == max(r["name"] for r in rows)
    nostats = tmp_path / "n.csup"
    nostats.write_bytes(small_segments_csup(sample_table(rows), statistics=False))
    doc = json.loads(_cli("inspect", "--json", str(nostats)).stdout)
    assert doc["statistics"] is False and doc["columns"]["id"]["min"] is None


def test_count_rows_of_several_super_types_reads_no_column(tmp_path: Path) -> None:
    """The writer gives the super column statistics (``count``, ``crc32``) like every
    other stream, so count_rows of a file of several super types is their sum: a
    corrupt column segment is no concern of count_rows, which reads nothing."""
    data = small_segments_csup(sample_rows(two_types=True), fuse=False)
    meta = file_meta(data)
    assert len(meta.super_types) > 1
    assert all(s.crc32 is not None and s.count for s in meta.super_column)
    assert meta.row_count == ROWS
    _label, _i, _n, seg = find_segment(data, 'column "name" (values')
    path = tmp_path / "two.csup"
    path.write_bytes(flip_byte(data, seg))

    async def count() -> int:
        async with csup_async.open(str(path)) as r:
            return await r.count_rows()

    assert _run(count()) == ROWS
    with pytest.raises(FormatError, match="checksum mismatch"):
        _run(_read(str(path), "scan"))



@settings(max_examples=200, deadline=None)
@given(st.binary(max_size=20000))
def test_the_crc_is_zlibs_crc32(data: bytes) -> None:
    """The check's CRC (zlib-ng's when installed) is the CRC-32 the writer stores."""
    import zlib

    from csup_async.scan.checks import crc32

    assert crc32(data) == zlib.crc32(data)
    assert crc32(memoryview(data)[1:]) == zlib.crc32(data[1:])
