"""What csup-async writes for each target is read by that target's real tool, value for
value and type for type: the tool's own binary output of our file (BSUP 2 from
``super`` v0.3.0, ZNG from ``zq`` v1.12.0) decodes to exactly what we wrote.

The files and the tools' outputs are committed (tests/data/real/targets/, made by
``python3 -m tests.support.targets_data``), so CI checks them without the binaries;
when a binary is built the tool is run again on a file written now."""

from __future__ import annotations

import json

import numpy as np
import pytest

from csup_async.format import bsup
from csup_async.format.superdb.bsup2 import V2, read_values
from csup_async.writers.targets.bsupn import encode_body
from csup_async.writers.targets.canon import sort_unions
from csup_async.writers.targets.supermodel import for_super
from tests.support import realtools, targets_data

CASES = [(name, target, kind) for target in targets_data.TOOLS for name in ("primitives",
         "nested", "long") for kind in ("csup", "bsup")]


def _path(name: str, target: str, kind: str):
    ext = targets_data.TOOLS[target][2] if kind == "csup" else "bsup"
    return targets_data.OUT / f"{name}.{target}.{ext}"


def _expected(name: str, target: str) -> list[tuple]:
    vals = targets_data.inputs()[name]
    if target == "super":  # super main's types are its own (T|null...): values compared
        return [_plain(bsup.decode_value(x.type, bsup.encode_value(x.type, x.value)))
                for x in vals]  # (the codec's Python forms: times as numpy's)
    if target.startswith("super"):
        return [(t, encode_body(t, v, V2)) for t, v in (for_super(x.type, x.value)
                                                        for x in vals)]
    return [(t, bsup.encode_value(t, v)) for t, v in (sort_unions(x.type, x.value)
                                                       for x in vals)]


def _plain(v):
    """A value for comparison across type systems: floats by their bits (NaN, -0.0)."""
    import struct

    if isinstance(v, float):
        return ("f", struct.pack("<d", v))
    if isinstance(v, (np.datetime64, np.timedelta64)):  # (NaT is not equal to itself)
        return ("t", int(v.astype("<i8")) if v.dtype.kind == "m" else int(
            v.astype("datetime64[ns]").astype("<i8")))
    if isinstance(v, dict):
        return {k: _plain(x) for k, x in v.items()}
    if isinstance(v, (list, tuple)):
        return [_plain(x) for x in v]
    return v


def _decoded(target: str, binary: bytes) -> list[tuple]:
    if target == "super":
        from csup_async.format.superdb import bsup5

        return [_plain(bsup5.decode_value(t, b)) for t, b in bsup5.read_values(binary)]
    if target.startswith("super"):
        return [(t, None if b is None else bytes(b)) for t, b in read_values(binary, V2)]
    return [(v.type, bsup.encode_value(v.type, v.value)) for v in bsup.read_values(binary)]


@pytest.mark.parametrize("name,target,kind", CASES)
def test_committed_file_is_what_we_write(name, target, kind):
    path = _path(name, target, kind)
    assert path.read_bytes() == targets_data.written(name, target, kind), (
        f"{path.name} is stale: rerun python3 -m tests.support.targets_data")


@pytest.mark.parametrize("name,target,kind", CASES)
def test_tool_read_what_we_wrote(name, target, kind):
    path = _path(name, target, kind)
    out = path.parent / (path.name + ".out")
    if not out.exists():
        pytest.skip(f"no committed output of {targets_data.TOOLS[target][1]} for {path.name}")
    want = _expected(name, target)
    assert _decoded(target, out.read_bytes()) == want
    lines = [json.loads(x) for x in (path.parent / (path.name + ".json")).read_text()
             .splitlines()]
    assert len(lines) == len(want)


@pytest.mark.parametrize("name,target,kind", CASES)
def test_tool_live(tmp_path, name, target, kind):
    tool, cmd, _ = targets_data.TOOLS[target]
    if realtools.find(tool, cmd) is None:
        pytest.skip(f"{cmd} {tool.version} is not built")
    path = tmp_path / _path(name, target, kind).name
    path.write_bytes(targets_data.written(name, target, kind))
    outs = targets_data.tool_outputs(target, path)
    assert outs is not None
    assert _decoded(target, outs[0]) == _expected(name, target)
