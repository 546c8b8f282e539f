"""target=: what each target writes reads back exactly through this library's readers
of that layout (CSUP v16 for super-0.3, VNG v3 for zed-1.12, BSUP 2/1), and bad names
are clear errors.  The real tools' side is tests/e2e/realtools/test_targets_live.py."""

from __future__ import annotations

import io
import json
import math
import os
import subprocess
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.format.bsup import encode_value
from csup_async.format.superdb import intcomp
from csup_async.format.superdb.bsup2 import V1, V2, decode_value, read_values
from csup_async.model.errors import ArgumentError, EncodeError, UnsupportedTypeError
from csup_async.model.types import NULL, STRING, ArrayType, UnionType
from csup_async.model.values import Value, infer_type
from csup_async.writers.targets import TARGETS, UnknownTargetError, resolve
from csup_async.writers.targets.bsupn import StreamEncoderN, encode_body
from csup_async.writers.targets.canon import compare_types, sort_unions, sorted_union
from csup_async.writers.targets.csup16 import MAX_OBJECT_VALUES
from csup_async.writers.targets.intcomp import encode_int64s, encode_uint32s, encode_uint64s
from csup_async.writers.targets.output import write_bsup, write_csup
from csup_async.writers.targets.supermodel import for_super, to_super
from tests.support.strategies import types, values_of

ROWS = [
    {"id": 1, "name": "ann", "score": 1.5, "ok": True, "tags": ["a", "b"], "at": None},
    {"id": 2, "name": None, "score": None, "ok": False, "tags": [], "at": {"x": 1}},
    {"id": -3, "name": "cy", "score": -0.0, "ok": None, "tags": ["c", None], "at": {"x": None}},
    7,
    "a string",
    None,
]


def _read(path: str) -> list[Value]:
    return csup_async.open_sync(path).read_values()


def _read_bytes(b: bytes) -> list[Value]:
    with tempfile.TemporaryDirectory() as d:
        path = os.path.join(d, "f")
        with open(path, "wb") as f:
            f.write(b)
        return _read(path)


def _own(tmp_path) -> list[Value]:
    """ROWS as this library's own layout types them (rows fused as ``write`` does)."""
    path = str(tmp_path / "own.csup")
    csup_async.write(path, ROWS, target="csup-async")
    return _read(path)


def _exact(t, v, dialect=V2) -> tuple:
    return (t, encode_body(t, v, dialect))


@pytest.mark.parametrize("name", ["nope", "super-0.1", "", "SUPER"])
def test_unknown_target_lists_the_accepted_names(tmp_path, name):
    with pytest.raises(UnknownTargetError) as e:
        csup_async.write(tmp_path / "x.csup", ROWS, target=name)
    assert isinstance(e.value, ArgumentError)
    for accepted in TARGETS:
        assert accepted in str(e.value)
    assert not (tmp_path / "x.csup").exists()


def test_default_target_is_super_main(tmp_path):
    """No target: CSUP v23, the file super main reads (the same bytes as naming it)."""
    a, b = tmp_path / "a.csup", tmp_path / "b.csup"
    csup_async.write(a, ROWS)
    csup_async.write(b, ROWS, target="super")
    assert a.read_bytes() == b.read_bytes()
    assert a.read_bytes()[:8] == b"CSUP" + (23).to_bytes(4, "little")
    assert resolve(None).name == "super"


def test_super_0_3_reads_back_in_superdb_model(tmp_path):
    path = str(tmp_path / "s.csup")
    assert csup_async.write(path, ROWS, target="super-0.3") == len(ROWS)
    data = Path(path).read_bytes()
    assert data[:4] == b"CSUP" and int.from_bytes(data[4:8], "little") == 16
    got = _read(path)
    want = [for_super(v.type, v.value) for v in _own(tmp_path)]
    assert [_exact(v.type, v.value) for v in got] == [_exact(t, v) for t, v in want]
    # a typed null becomes super's null value; a null element makes a union
    assert got[1].type.field("name").type == NULL
    assert got[2].type.field("tags").type == ArrayType(UnionType((STRING, NULL)))


def test_zed_1_12_reads_back_exactly(tmp_path):
    path = str(tmp_path / "z.vng")
    csup_async.write(path, ROWS, target="zed-1.12")
    got = _read(path)
    assert [(v.type, encode_value(v.type, v.value)) for v in got] == [
        (v.type, encode_value(v.type, v.value)) for v in _own(tmp_path)]


def test_many_objects_and_columnar_input(tmp_path):
    """More values than one v16 object holds (super cuts at 120,000), from Arrow input."""
    pa = pytest.importorskip("pyarrow")
    n = MAX_OBJECT_VALUES + 5
    table = pa.table({"i": np.arange(n), "s": [f"v{i % 7}" for i in range(n)]})
    path = str(tmp_path / "big.csup")
    csup_async.write(path, table, target="super-0.3")


    res = csup_async.read(path, ["i", "s"])
    assert res.column("i").to_numpy().tolist() == list(range(n))
    assert res.to_pylist()[-1] == {"i": n - 1, "s": f"v{(n - 1) % 7}"}


def test_cli_convert_target(tmp_path):
    from csup_async.cli import main

    src = tmp_path / "in.ndjson"
    src.write_text("\n".join(json.dumps(r) for r in ROWS if isinstance(r, dict)))
    for target in ("super-0.3", "zed-1.12"):
        out = tmp_path / f"{target}.csup"
        assert main(["convert", str(src), str(out), "--target", target]) == 0
        assert len(_read(str(out))) == 3
    bs = tmp_path / "o.bsup"
    assert main(["convert", str(src), str(bs), "--target", "super-0.3"]) == 0
    assert bs.read_bytes()[0] == 0x82  # BSUP version 2 frames
    assert main(["convert", str(src), str(tmp_path / "x.csup"), "--target", "nah"]) != 0


def test_bsup_versions(tmp_path):
    vals = [Value(infer_type(r), r) for r in ROWS]
    for target, version in (("super-0.3", 2), ("csup-async", 0), ("zed-1.12", 0)):
        out = io.BytesIO()
        assert write_bsup(out, vals, target) == len(vals)
        b = out.getvalue()
        if version:
            assert b[0] == 0x80 | version
            got = read_values(b, V2)
            want = [for_super(v.type, v.value) for v in vals]
            assert [(t, bytes(x) if x is not None else None) for t, x in got] == [
                (t, encode_body(t, v, V2)) for t, v in want]
        else:
            assert [(v.type, v.value) for v in csup_async.format.bsup.read_values(b)] == [
                (v.type, v.value) for v in vals]
    with pytest.raises(UnknownTargetError):
        write_bsup(io.BytesIO(), vals, "zq")


def test_super_target_without_its_writer_is_a_clear_error(tmp_path):
    from csup_async.writers.targets import v23_writer

    if v23_writer() is not None:
        pytest.skip("this build has the v23 writer")
    with pytest.raises(EncodeError, match="not available in this build"):
        csup_async.write(tmp_path / "x.csup", ROWS, target="super")


# ---------------------------------------------------------------- properties ---

@given(st.lists(st.integers(0, 2**32 - 1), max_size=600))
@settings(max_examples=60, deadline=None)
def test_intcomp_uint32_roundtrip(xs):
    assert intcomp.uint32s(encode_uint32s(xs)).tolist() == xs


@given(st.lists(st.integers(-2**63, 2**63 - 1), max_size=600))
@settings(max_examples=60, deadline=None)
def test_intcomp_int64_roundtrip(xs):
    assert intcomp.int64s(encode_int64s(xs)).tolist() == xs
    us = [x % 2**64 for x in xs]
    assert intcomp.uint64s(encode_uint64s(us)).tolist() == us


_NOT_SUPER = {"uint128", "uint256", "int128", "int256"}


def _super_ok(t) -> bool:
    from csup_async.model.types import PrimitiveType

    if isinstance(t, PrimitiveType):
        return t.name not in _NOT_SUPER
    return all(_super_ok(c) for c in _children(t))


def _children(t):
    for attr in ("inner", "elem", "key", "value"):
        c = getattr(t, attr, None)
        if c is not None:
            yield c
    for f in getattr(t, "fields", ()):
        yield f.type
    yield from getattr(t, "types", ())


_rows = types.filter(_super_ok).flatmap(
    lambda t: st.lists(values_of(t), min_size=1, max_size=5).map(lambda vs: (t, vs)))


@given(st.lists(_rows, min_size=1, max_size=3))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_csup16_property(groups):
    vals = [Value(t, v) for t, vs in groups for v in vs]
    out = io.BytesIO()
    try:
        write_csup(out, vals, "super-0.3")
    except EncodeError:
        return  # a construct refused by name (e.g. a name bound to two types by nulls)
    got = _read_bytes(out.getvalue())
    want = [for_super(v.type, v.value) for v in vals]
    assert [_exact(g.type, g.value) for g in got] == [_exact(t, v) for t, v in want]


@given(st.lists(_rows, min_size=1, max_size=3))
@settings(max_examples=80, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_vng3_property(groups):
    vals = [Value(t, v) for t, vs in groups for v in vs]
    out = io.BytesIO()
    write_csup(out, vals, "zed-1.12")
    got = _read_bytes(out.getvalue())
    want = [sort_unions(v.type, v.value) for v in vals]  # unions in zq's order
    assert [(g.type, encode_value(g.type, g.value)) for g in got] == [
        (t, encode_value(t, v)) for t, v in want]


@given(st.lists(_rows, min_size=1, max_size=3), st.sampled_from([1, 2]))
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_bsupn_property(groups, version):
    vals = [to_super(t, v) for t, vs in groups for v in vs]
    d = {1: V1, 2: V2}[version]
    buf = bytearray()
    enc = StreamEncoderN(buf, version)
    for t, v in vals:
        enc.write(t, v)
    enc.end_stream()
    got = read_values(buf, d)
    assert [(t, None if b is None else bytes(b)) for t, b in got] == [
        (t, encode_body(t, v, d)) for t, v in vals]
    for (t, b), (_, v) in zip(got, vals, strict=True):
        x = decode_value(t, b, typed=True, dialect=d)
        if not (isinstance(v, float) and math.isnan(v)):
            assert encode_body(t, x, d) == encode_body(t, v, d)


def test_int64_column_min_max_are_supers(tmp_path):
    from csup_async.format.superdb.meta import parse_header, parse_metadata

    path = tmp_path / "m.csup"
    csup_async.write(path, [{"x": v} for v in (5, -9, 12, 0)], target="super-0.3")
    b = path.read_bytes()
    h = parse_header(b)
    obj = parse_metadata(b[36:36 + h.meta_size], 0, h)
    ints = [n for n in obj.nodes if n.kind == "int"]
    assert [(n.min, n.max, n.count) for n in ints] == [(-9, 12, 4)]


def test_spark_target_option_is_checked_on_the_driver():
    from csup_async.spark.options import parse_options

    s = parse_options({"path": "/tmp/x", "target": "zed-1.12"}, write=True)
    assert s.writer_options() == {"target": "zed-1.12"}
    with pytest.raises(UnknownTargetError, match=r"super-0\.3"):
        parse_options({"path": "/tmp/x", "target": "zed"}, write=True)


async def test_lake_load_target_chooses_the_copy_layout(tmp_path):
    """``load(csup=True, target=)``: the columnar copy in the target's layout, read back
    the same; an unknown target is refused before anything is written."""
    import shutil

    from csup_async.lake import open_lake
    from tests.support.paths import DATA

    db = tmp_path / "db"
    shutil.copytree(DATA / "real" / "superdb-0.3", db)
    rows = [{"ts": np.datetime64("2030-01-01T00:00:00", "ns") + np.timedelta64(i, "s"),
             "id": 5000 + i, "msg": None, "tags": [], "extra": i} for i in range(3)]
    before = sorted(p.name for p in db.rglob("*"))
    async with open_lake(str(db)) as lake:
        pool = await lake.pool("logs@main")
        with pytest.raises(UnknownTargetError):
            await pool.load(rows, csup=True, target="zq")
        assert sorted(p.name for p in db.rglob("*")) == before
        await pool.load(rows, csup=True, target="zed-1.12")
        got = (await (await lake.pool("logs@main")).scan(csup=True)).to_pylist()
    assert [r["id"] for r in got][-3:] == [5000, 5001, 5002]
    (copy,) = [p for p in db.rglob("*.csup") if p.name not in before]
    assert copy.read_bytes()[-200:].find(b"ZNG Trailer") >= 0  # VNG, Zed's layout


def test_unions_are_written_in_zed_order(tmp_path):
    """zq and super intern a union with its members sorted and read a member index
    against that order: a union written otherwise would read as the wrong member."""
    from csup_async.model.types import INT64, STRING
    from csup_async.model.values import UnionValue

    u = UnionType((ArrayType(INT64), STRING, NULL, INT64))
    assert sorted_union(list(u.types)).types == (INT64, STRING, NULL, ArrayType(INT64))
    assert compare_types(INT64, STRING) < 0 < compare_types(ArrayType(INT64), NULL)
    vals = [Value(ArrayType(u), [UnionValue(0, ArrayType(INT64), [1]), UnionValue(1, STRING, "s"),
                                UnionValue(3, INT64, 5)])]
    path = str(tmp_path / "u.vng")
    with open(path, "wb") as f:
        write_csup(f, vals, "zed-1.12")
    (got,) = _read(path)
    assert got.type == ArrayType(UnionType((INT64, STRING, NULL, ArrayType(INT64))))
    assert got.to_python() == [[1], "s", 5]


def _tool_reads(target: str, data: bytes, kind: str) -> list[tuple]:
    """What the target's real tool read of ``data`` (its binary output, decoded)."""
    from tests.support import targets_data
    from tests.unit.writers.test_targets_real import _decoded

    with tempfile.TemporaryDirectory() as d:
        path = Path(d) / f"x.{'bsup' if kind == 'bsup' else 'csup'}"
        path.write_bytes(data)
        outs = targets_data.tool_outputs(target, path, json=False)
    assert outs is not None
    return _decoded(target, outs[0])


def _need(target: str) -> None:
    from tests.support import realtools, targets_data

    tool, cmd, _ = targets_data.TOOLS[target]
    if realtools.find(tool, cmd) is None:
        pytest.skip(f"{cmd} {tool.version} is not built")


_tool_rows = types.filter(_super_ok).filter(lambda t: "type" not in str(t)).flatmap(
    lambda t: st.lists(values_of(t), min_size=1, max_size=4).map(lambda vs: (t, vs)))


def _main_ok(tv) -> bool:
    """super main's writer (v23's) is not judged here on named types (one name bound to
    two types in a value panics super main), empty records (read back as ``[]``), sets
    and maps:
    reported in /work/coord (targets-to-v23-cases.md), left to its own tests."""
    text = str(tv[0])
    # (and sets: super main orders a set's elements its own way; compared as values here)
    # (and maps: super main merges keys equal as values, 0.0 and -0.0)
    return not any(x in text for x in ("=", "{}", "|[", "|{", "n1", "n2", "port"))


@pytest.mark.parametrize("target", ["super", "super-0.3", "zed-1.12"])
@pytest.mark.parametrize("kind", ["csup", "bsup"])
def test_property_the_real_tool_reads_what_we_write(target, kind):
    """Random values, written for the target, read by its real tool type for type."""
    _need(target)

    rows = _tool_rows.filter(_main_ok) if target == "super" else _tool_rows

    @given(st.lists(rows, min_size=1, max_size=2))
    @settings(max_examples=int(os.environ.get("TARGET_EXAMPLES", "15")), deadline=None,
              suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture])
    def check(groups):
        from tests.unit.writers.test_v03_union_tag import v03_union_tag_panics

        if target == "super-0.3" and kind == "csup" and v03_union_tag_panics(
                [t for t, _ in groups]):
            return  # super v0.3.0 panics on its own file of these (test_v03_union_tag)
        vals = [Value(t, v) for t, vs in groups for v in vs]
        out = io.BytesIO()
        try:
            if kind == "csup":
                write_csup(out, vals, target)
            else:
                write_bsup(out, vals, target, compress=False)
        except (EncodeError, UnsupportedTypeError):
            return
        if target == "super":  # super main's own types (T|null...): values compared
            from csup_async.writers.targets.supermodel import normal_sets
            from tests.unit.writers.test_targets_real import _plain

            want = []
            for x in vals:  # nulls typed null, sets unique: as super main holds them
                st_, sv_ = to_super(x.type, x.value)
                sv_ = normal_sets(st_, sv_)
                want.append(_plain(csup_async.format.bsup.decode_value(
                    st_, encode_value(st_, sv_))))
        elif target == "super-0.3":
            want = [(t, encode_body(t, v, V2)) for t, v in
                    (for_super(x.type, x.value) for x in vals)]
        else:
            want = [(t, encode_value(t, v)) for t, v in
                    (sort_unions(x.type, x.value) for x in vals)]
        try:
            got = _tool_reads(target, out.getvalue(), kind)
        except subprocess.CalledProcessError as e:
            raise AssertionError(f"{target} refused {vals}: "
                                 f"{e.stderr.decode(errors='replace')[:300]}") from None
        assert got == want, (target, kind, vals)

    check()


def test_super_target_reads_back(tmp_path):
    """target="super": CSUP v23 (super main's layout), read back through open()."""
    from csup_async.writers.targets import v23_writer

    if v23_writer() is None:
        pytest.skip("this build has no v23 writer")
    path = str(tmp_path / "m.csup")
    csup_async.write(path, ROWS, target="super")
    data = Path(path).read_bytes()
    assert data[:4] == b"CSUP" and int.from_bytes(data[4:8], "little") == 23
    assert data[-4:] == b"CSUP"  # the part's trailer
    assert [v.to_python() for v in _read(path)] == [v.to_python() for v in _own(tmp_path)]


@pytest.mark.parametrize("target", ["super-0.3", "zed-1.12", "super"])
def test_a_map_with_keys_0_and_minus_0_keeps_both_entries(target):
    """0.0 and -0.0 are two keys of a map in the file but one key of a Python dict: every
    reader gives the list of pairs then (docs/api.md), found by test_csup16_property."""
    from csup_async.model.types import FLOAT64, INT64, MapType

    t = MapType(FLOAT64, INT64)
    out = io.BytesIO()
    write_csup(out, [Value(t, [(0.0, 1), (-0.0, 2)])], target)
    (got,) = _read_bytes(out.getvalue())
    assert isinstance(got.value, list) and len(got.value) == 2
    assert sorted((math.copysign(1, k), v) for k, v in got.value) == [(-1.0, 2), (1.0, 1)]
