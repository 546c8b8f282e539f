"""ZNG/BSUP files written by the real Zed ``zq`` (v1.7.0, v1.12.0) read value for value.

The files and zq's own JSON of them are committed under ``tests/data/real/`` (see its
README for the commands), so this runs without the binaries.
"""

from __future__ import annotations

from pathlib import Path

import pytest

from csup_async.format.bsup import encode_value, read_values
from csup_async.model.types import ErrorType, PrimitiveType, RecordType
from tests.support.zedjson import load_lines, zed_json

REAL = Path(__file__).resolve().parents[2] / "data" / "real"

CASES = [
    ("zed1.12-all.zng", "zed1.12-all.json", False),
    ("zed1.12-all-uncompressed.zng", "zed1.12-all.json", False),
    ("zed1.7-all.zng", "zed1.7-all.json", True),
]


@pytest.mark.parametrize(("name", "expected", "map_as_records"), CASES)
def test_zq_written_zng_reads_as_zq_prints_it(name: str, expected: str,
                                              map_as_records: bool) -> None:
    values = read_values((REAL / name).read_bytes())
    want = load_lines(REAL / expected)
    assert len(values) == len(want)
    for i, (v, w) in enumerate(zip(values, want, strict=True)):
        assert zed_json(v.type, v.value, map_as_records=map_as_records) == w, f"value {i}"


def test_zq_error_values_are_the_wrapped_body_itself() -> None:
    """Zed encodes error("bad 0") as the string's bytes, not as a one-element container."""
    values = read_values((REAL / "zed1.12-all.zng").read_bytes())
    first = values[0]
    assert isinstance(first.type, RecordType)
    err_t = next(f.type for f in first.type.fields if f.name == "err")
    assert err_t == ErrorType(PrimitiveType("string", 25))
    assert first.value["err"] == "bad 0"
    assert encode_value(err_t, "bad 0") == b"bad 0"
