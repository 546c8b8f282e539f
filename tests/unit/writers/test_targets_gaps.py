"""Constructs the target writers once left out, read by the real tools exactly: optional
fields for ``super-0.3`` (CSUP v16 ``Nones`` runs, BSUP 2) and dictionaries and
constants for ``zed-1.12`` (VNG v3), as zq itself writes them.

Committed (tests/data/real/targets/gaps/, ``python3 -m tests.support.targets_gaps``): our
files and each tool's own BSUP/ZNG of what it read; CI compares those type for type with
the inputs.  With the binaries built, the tools read files written now, and random
values (hypothesis) too.
"""

from __future__ import annotations

import io
import os
import subprocess
import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.format import bsup
from csup_async.format.superdb.bsup2 import V2, OptField
from csup_async.model.types import PRIMITIVE_BY_NAME as P
from csup_async.model.types import ArrayType, EnumType, Field, RecordType
from csup_async.model.values import Value
from csup_async.writers.targets.bsupn import encode_body
from csup_async.writers.targets.canon import sort_unions
from csup_async.writers.targets.csup16 import none_runs
from csup_async.writers.targets.output import write_bsup, write_csup
from csup_async.writers.targets.supermodel import for_super
from tests.support import realtools, targets_data, targets_gaps
from tests.unit.writers.test_targets_real import _decoded

CASES = [(name, target, kind) for name, (_, targets) in targets_gaps.INPUTS.items()
         for target in targets for kind in ("csup", "bsup")]


def _want(target: str, vals: list[Value]) -> list[tuple]:
    if target == "super-0.3":
        return [(t, encode_body(t, v, V2)) for t, v in (for_super(x.type, x.value)
                                                        for x in vals)]
    return [(t, bsup.encode_value(t, v)) for t, v in (sort_unions(x.type, x.value)
                                                       for x in vals)]


def _defused(vals: list[Value]) -> list[Value]:
    """Fusion values as our reader gives them: each its subtype's value."""
    from csup_async.format.superdb.bsup2 import FusionType

    return [Value(x.value.type, x.value.value) if isinstance(x.type, FusionType) else x
            for x in vals]


def _ours(target: str, got: list[Value]) -> list[tuple]:
    """Our reader's values in the form :func:`_want` gives."""
    if target == "super-0.3":
        return [(v.type, encode_body(v.type, v.value, V2)) for v in got]
    return [(v.type, bsup.encode_value(v.type, v.value)) for v in got]


def _read_back(data: bytes, suffix: str) -> list[Value]:
    with tempfile.TemporaryDirectory() as d:
        p = Path(d) / f"x{suffix}"
        p.write_bytes(data)
        return csup_async.open_sync(str(p)).read_values()


@pytest.mark.parametrize(("name", "target", "kind"), CASES)
def test_the_committed_file_is_what_we_write(name: str, target: str, kind: str) -> None:
    assert targets_gaps.path_of(name, target, kind).read_bytes() == \
        targets_gaps.written(name, target, kind)


@pytest.mark.parametrize(("name", "target", "kind"), CASES)
def test_the_tool_read_exactly_what_we_wrote(name: str, target: str, kind: str) -> None:
    path = targets_gaps.path_of(name, target, kind)
    out = (path.parent / (path.name + ".out")).read_bytes()
    assert _decoded(target, out) == _want(target, targets_gaps.INPUTS[name][0]())


@pytest.mark.parametrize(("name", "target", "kind"), CASES)
def test_we_read_back_what_we_wrote(name: str, target: str, kind: str) -> None:
    path = targets_gaps.path_of(name, target, kind)
    got = _read_back(path.read_bytes(), path.suffix)
    vals = targets_gaps.INPUTS[name][0]()
    # fusion values read as their subtypes' from BSUP too, as from CSUP (as super prints
    # them: tests/unit/readers/test_bsup_fusion.py)
    assert _ours(target, got) == _want(target, _defused(vals))


@pytest.mark.parametrize(("name", "target", "kind"), CASES)
def test_live_the_tool_reads_a_file_written_now(tmp_path: Path, name: str, target: str,
                                                kind: str) -> None:
    tool, cmd, _ = targets_data.TOOLS[target]
    if realtools.find(tool, cmd) is None:
        pytest.skip(f"{cmd} {tool.version} is not built")
    path = tmp_path / targets_gaps.path_of(name, target, kind).name
    path.write_bytes(targets_gaps.written(name, target, kind))
    outs = targets_data.tool_outputs(target, path, json=False)
    assert outs is not None
    assert _decoded(target, outs[0]) == _want(target, targets_gaps.INPUTS[name][0]())


@pytest.mark.parametrize("name", targets_gaps.FROM_SUPER)
@pytest.mark.parametrize("kind", ["csup", "bsup"])
def test_super_files_converted_read_as_the_originals(name: str, kind: str) -> None:
    """super v0.3.0's own BSUP with fusion values and optional fields, converted to
    ``super-0.3``: super's BSUP of ours is byte for byte its BSUP of the original."""
    path = targets_gaps.converted_path(name, kind)
    assert path.read_bytes() == targets_gaps.converted(name, kind)
    ours = (path.parent / (path.name + ".out")).read_bytes()
    assert ours == (targets_gaps.OUT / f"super-{name}.orig.out").read_bytes()


@pytest.mark.parametrize("name", targets_gaps.FROM_SUPER)
def test_live_super_reads_a_conversion_made_now_as_the_original(tmp_path: Path,
                                                               name: str) -> None:
    if realtools.find(realtools.SUPER_0_3, "super") is None:
        pytest.skip("super v0.3.0 is not built")
    from csup_async.cli import main

    out = tmp_path / f"{name}.csup"
    src = targets_gaps.SUPER_FILES / f"{name}.bsup"
    assert main(["convert", str(src), str(out), "--target", "super-0.3"]) == 0
    ours = targets_data.tool_outputs("super-0.3", out, json=False)
    orig = targets_data.tool_outputs("super-0.3", src, json=False)
    assert ours is not None and orig is not None and ours[0] == orig[0]


def test_the_files_hold_what_they_are_for(capsys: pytest.CaptureFixture[str]) -> None:
    """The VNG file has dictionaries and constants; the CSUP v16 one optional fields."""
    from csup_async.cli import main

    assert main(["inspect", str(targets_gaps.path_of("dicts", "zed-1.12", "csup"))]) == 0
    text = capsys.readouterr().out
    assert "constant: 600 copies" in text and "dictionary of 3" in text
    assert "dictionary of 2" in text  # (the enum column)
    data = targets_gaps.path_of("optional", "super-0.3", "csup").read_bytes()
    assert b"Nones" in data and b"Opt" in data


@pytest.mark.parametrize(("present", "n", "runs"), [
    ([0, 1, 2], 3, []), ([], 3, [3]), ([1], 3, [1, 1, 1]), ([0], 3, [0, 1, 2]),
    ([2], 3, [2, 1]), ([0, 2], 3, [0, 1, 1, 1]), ([1, 2], 4, [1, 2, 1])])
def test_none_runs_are_supers(present: list[int], n: int, runs: list[int]) -> None:
    """super v0.3.0's ``vector.RLE``: absent, present, ... from absent (maybe 0), none
    when every row is present."""
    assert none_runs(present, n) == runs


# ------------------------------------------------------------ properties ---
_FIELD_TYPES = [P["int64"], P["string"], P["bool"], P["float64"], ArrayType(P["int64"]),
                RecordType((Field("q", P["int64"]),))]
_SAMPLES = {"int64": st.integers(-3, 3), "string": st.sampled_from(["", "a", "bb"]),
            "bool": st.booleans(), "float64": st.sampled_from([0.5, -2.0])}


def _value_of(t) -> st.SearchStrategy:
    if isinstance(t, ArrayType):
        return st.lists(st.integers(-2, 2), max_size=3)
    if isinstance(t, RecordType):
        return st.fixed_dictionaries({"q": st.integers(0, 2)})
    return _SAMPLES[t.name]


@st.composite
def _optional_rows(draw: st.DrawFn) -> list[Value]:
    """Rows of one record type of 1-4 fields, each optional or not, optional ones
    present at random (runs of any shape), values possibly null."""
    k = draw(st.integers(1, 4))
    fts = [draw(st.sampled_from(_FIELD_TYPES)) for _ in range(k)]
    opts = [draw(st.booleans()) for _ in range(k)]
    names = [f"f{i}" for i in range(k)]
    t = RecordType(tuple((OptField if o else Field)(n, ft)
                         for n, ft, o in zip(names, fts, opts, strict=True)))
    rows = []
    for _ in range(draw(st.integers(1, 12))):
        v = {}
        for n, ft, o in zip(names, fts, opts, strict=True):
            if o and draw(st.booleans()):
                continue
            v[n] = draw(st.none() | _value_of(ft)) if not o else draw(_value_of(ft))
        rows.append(Value(t, v))
    return rows


@st.composite
def _few_values(draw: st.DrawFn) -> list[Value]:
    """Rows of primitive and enum columns with few distinct values (dictionaries),
    often one (constants), nulls among them."""
    color = EnumType(("r", "g", "b"))
    cols = {"s": (P["string"], ["x", "y", "z"]), "i": (P["int32"], [1, -1, 7]),
            "f": (P["float32"], [0.25, 1.5]), "e": (color, ["r", "b"]),
            "u": (P["uint8"], [0, 255])}
    t = RecordType(tuple(Field(n, ct) for n, (ct, _) in cols.items()))
    pools = {n: draw(st.lists(st.sampled_from(vs), min_size=1, max_size=len(vs), unique=True))
             for n, (_, vs) in cols.items()}
    n_rows = draw(st.integers(1, 30))
    return [Value(t, {n: draw(st.none() | st.sampled_from(pools[n])) for n in cols})
            for _ in range(n_rows)]


@st.composite
def _fusion_rows(draw: st.DrawFn) -> list[Value]:
    """Fusion values of a supertype of 1-4 optional fields, each naming a subtype of
    some of its fields in an order of its own."""
    from csup_async.format.superdb.bsup2 import FusionType

    k = draw(st.integers(1, 4))
    fts = [draw(st.sampled_from(_FIELD_TYPES)) for _ in range(k)]
    names = [f"f{i}" for i in range(k)]
    ft = FusionType(RecordType(tuple(OptField(n, t) for n, t in zip(names, fts,
                                                                   strict=True))))
    rows = []
    for _ in range(draw(st.integers(1, 10))):
        order = draw(st.permutations(range(k)))
        keep = [i for i in order if draw(st.booleans())]
        sub = RecordType(tuple(Field(names[i], fts[i]) for i in keep))
        rows.append(Value(ft, Value(sub, {names[i]: draw(_value_of(fts[i])) for i in keep})))
    return rows


@given(_fusion_rows())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_property_fusion_values_read_back(rows: list[Value]) -> None:
    out = io.BytesIO()
    write_csup(out, rows, "super-0.3")
    got = _read_back(out.getvalue(), ".csup")
    assert _ours("super-0.3", got) == _want("super-0.3", _defused(rows))


@given(_optional_rows())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_property_optional_fields_read_back(rows: list[Value]) -> None:
    for kind in ("csup", "bsup"):
        out = io.BytesIO()
        (write_csup if kind == "csup" else write_bsup)(out, rows, "super-0.3")
        got = _read_back(out.getvalue(), f".{kind}")
        assert _ours("super-0.3", got) == _want("super-0.3", rows)


@given(_few_values())
@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
def test_property_dictionaries_read_back(rows: list[Value]) -> None:
    out = io.BytesIO()
    write_csup(out, rows, "zed-1.12")
    got = _read_back(out.getvalue(), ".vng")
    assert _ours("zed-1.12", got) == _want("zed-1.12", rows)


@pytest.mark.parametrize(("target", "strategy"), [("super-0.3", _optional_rows()),
                                                  ("super-0.3", _fusion_rows()),
                                                  ("zed-1.12", _few_values())],
                         ids=["optional", "fusion", "dicts"])
def test_property_live_the_tool_reads_them(target: str, strategy) -> None:
    tool, cmd, ext = targets_data.TOOLS[target]
    if realtools.find(tool, cmd) is None:
        pytest.skip(f"{cmd} {tool.version} is not built")

    @given(strategy)
    @settings(max_examples=int(os.environ.get("TARGET_EXAMPLES", "15")), deadline=None,
              suppress_health_check=[HealthCheck.too_slow])
    def check(rows: list[Value]) -> None:
        out = io.BytesIO()
        write_csup(out, rows, target)
        with tempfile.TemporaryDirectory() as d:
            p = Path(d) / f"x.{ext}"
            p.write_bytes(out.getvalue())
            try:
                outs = targets_data.tool_outputs(target, p, json=False)
            except subprocess.CalledProcessError as e:
                raise AssertionError(f"{cmd} refused {rows}: "
                                     f"{e.stderr.decode(errors='replace')[:300]}") from None
        assert outs is not None
        assert _decoded(target, outs[0]) == _want(target, rows)

    check()
