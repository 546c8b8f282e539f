"""The planner on metadata of real files from the project's writer and parser.

Serves each plan's requests from the file's bytes, as a reader would, and
checks that every needed segment comes back byte for byte (decompressing to
its ``mem_length``), that nothing outside the requests is touched, and that a
file smaller than the tail read needs no data request at all.
"""

from __future__ import annotations

import io

import pytest

import planner as P

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


writer = pytest.importorskip("csup_async.writers.writing")
fmt = pytest.importorskip("csup_async.format.csup")
lz4_block = pytest.importorskip("lz4.block")


def _file(rows: list, **opts: int) -> tuple[bytes, object]:
    out = io.BytesIO()
    writer.write(out, rows, **opts)
    data = out.getvalue()
    t = fmt.find_trailer(data[-4096:], len(data))
    meta = fmt.parse_reassembly(data[t.data_size : t.data_size + t.reassembly_size], t, len(data))
    return data, meta


def _rows(n: int) -> list:
    rows: list = []
    for i in range(n):
        if i % 7 == 3:
            rows.append(i)  # a second super type: a top-level int64
        else:
            rows.append({"id": i, "name": f"user-{i}" * (1 + i % 5),
                         "geo": None if i % 4 == 0 else {"lat": i / 3, "tags": ["x"] * (i % 3)}})
    return rows


def _serve(data: bytes, plan: P.ScanPlan) -> None:
    """Fetch only the planned requests; rebuild every needed segment from its pieces."""
    fetched = {r.offset: data[r.offset : r.end] for r in plan.requests}
    parts: dict = {}
    for r in plan.requests:
        body = fetched[r.offset]
        for seg, at, start, n in r.pieces:
            parts.setdefault(seg, []).append((start, body[at : at + n]))
    for seg in plan.segments:
        if not seg.length:
            continue
        raw = b"".join(chunk for _, chunk in sorted(parts[seg], key=lambda p: p[0]))
        assert raw == data[seg.offset : seg.end]
        if seg.compression == 1:
            raw = lz4_block.decompress(raw, uncompressed_size=seg.mem_length)
        assert len(raw) == seg.mem_length


@pytest.mark.parametrize("profile", sorted(P.PROFILES))
def test_real_file_every_projection(profile: str):
    data, meta = _file(_rows(3000), segment_thresh=2048)
    assert len(meta.super_types) > 1
    for columns in (None, ["id"], ["geo.lat"], ["geo.tags", "name"], ["geo"], [""],
                    ["missing"]):
        plan = P.plan_scan(meta, columns, profile)
        _serve(data, plan)
        if columns == ["missing"]:
            assert plan.missing_paths == ("missing",) and plan.requests == ()
        else:
            assert plan.super_stream is not None  # two super types: rows need their IDs
    geo_lat = P.plan_scan(meta, ["geo.lat"], profile)
    labels = {(r.path, r.role) for refs in geo_lat.streams for r in refs}
    assert ("geo.lat", "values") in labels
    assert all(path.startswith("geo") for path, _ in labels)
    assert geo_lat.bytes_needed < P.plan_scan(meta, None, profile).bytes_needed


def test_real_small_file_is_one_round_trip():
    data, meta = _file([{"a": "hello", "b": "world"}, {"a": "goodnight", "b": "gracie"}])
    tail = P.tail_prefetch_size("s3", object_size=len(data))
    assert tail == len(data)
    assert P.metadata_followup(len(data), tail, meta.trailer.data_size,
                               meta.trailer.reassembly_size, meta.trailer.size) is None
    plan = P.plan_scan(meta, ["a"], "s3", available=(len(data) - tail, tail))
    assert plan.request_count == 0 and plan.bytes_to_read == 0
    _serve(data, plan)
    # the seed's layout: a, b, then the super column; one super type, so "a" is one segment
    assert len(plan.segments) == 1 and plan.segments[0].offset == 0
