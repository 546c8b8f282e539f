"""Small files with many segments, and ways to corrupt exactly one of them: what the
checksum tests (unit and Spark) read."""

from __future__ import annotations

import io
from typing import Any

import csup_async
from csup_async.format.csup import find_trailer, parse_reassembly
from csup_async.format.meta import FileMeta, Segment
from csup_async.scan.checks import iter_labelled_segmaps

ROWS = 3000


def sample_rows(two_types: bool = False) -> list[dict[str, Any]]:
    out = []
    for i in range(ROWS):
        row: dict[str, Any] = {
            "id": i * 7 - 5000,
            "name": f"user-{i % 97:03d}-{'x' * (i % 13)}",
            "rec": {"x": None if i % 5 == 0 else i / 4, "tag": ["a", "b", "c"][i % 3]},
            "tags": list(range(i % 4)),
        }
        if two_types and i % 2:
            row["extra"] = i
        out.append(row)
    return out


def sample_table(rows: list[dict[str, Any]]) -> Any:
    """Rows as Arrow: one super type, with presence columns where values are null."""
    import pyarrow as pa

    schema = pa.schema([("id", pa.int64()), ("name", pa.string()),
                        ("rec", pa.struct([("x", pa.float64()), ("tag", pa.string())])),
                        ("tags", pa.list_(pa.int64()))])
    return pa.Table.from_pylist(rows, schema=schema)


def small_segments_csup(rows: Any, **opts: Any) -> bytes:
    out = io.BytesIO()
    opts.setdefault("target", "csup-async")  # small segments: this library's layout
    csup_async.write(out, rows, segment_thresh=1024, **opts)
    return out.getvalue()


GOOD = small_segments_csup(sample_table(sample_rows()))
PLAIN = small_segments_csup(sample_table(sample_rows()), compress=False)


def file_meta(data: bytes) -> FileMeta:
    t = find_trailer(data[-4096:], len(data))
    return parse_reassembly(data[t.data_size: t.data_size + t.reassembly_size], t, len(data))


def find_segment(data: bytes, label_part: str, index: int = 1) -> tuple[str, int, int, Segment]:
    """(label, index, segments in the segmap, segment) of the first segmap whose label
    holds ``label_part`` and has more than ``index`` segments."""
    for label, segmap in iter_labelled_segmaps(file_meta(data)):
        if label_part in label and len(segmap) > index:
            return label, index, len(segmap), segmap[index]
    raise AssertionError(f"no segmap {label_part!r} with {index + 1} segments")


def flip_byte(data: bytes, seg: Segment, at: int | None = None) -> bytes:
    b = bytearray(data)
    b[seg.offset + (seg.length // 2 if at is None else at)] ^= 0x04
    return bytes(b)
