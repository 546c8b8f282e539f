"""Builders and hypothesis strategies for the planner tests (this module holds no tests).

``metas()`` draws random files: random super types (records, arrays, sets,
maps, unions, named/error wrappers, primitives), a column tree matching each
type (with ``NullsColumn`` wrappers, all-null fields, empty presence), and
segments laid out in a data section in a random, round-robin ("flushes") or
column-by-column order, with optional junk between them and, sometimes, a
segment shared by two streams.  Alongside the meta it returns, for every
stream, the facts an independent oracle needs: the record-field path where the
stream lives, whether it is a presence stream at that level, and whether an
array/map/union lies between that level and the stream.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass

from hypothesis import strategies as st

from csup_async.format.meta import (
    ArrayColumn,
    FieldColumn,
    FileMeta,
    MapColumn,
    NullsColumn,
    PrimitiveColumn,
    RecordColumn,
    Segment,
    Trailer,
    UnionColumn,
)
from csup_async.model.types import (
    INT32,
    INT64,
    STRING,
    ArrayType,
    ErrorType,
    Field,
    MapType,
    NamedType,
    RecordType,
    SetType,
    Type,
    UnionType,
)

FIELD_NAMES = ("a", "b", "c", "d", "x.y")


@dataclass
class StreamInfo:
    super_id: int
    rpath: tuple[str, ...]  # record fields from the top to the level where the stream lives
    level_presence: bool  # a field's or a NullsColumn's presence at that record level
    below_boundary: bool  # an array/map/union lies between the level and the stream
    lengths: list[int]
    segments: tuple[Segment, ...] = ()


class _Skel:
    """A column tree whose segmaps are stream ids, turned into columns after layout."""

    def __init__(self, kind: str, *parts: object) -> None:
        self.kind = kind
        self.parts = parts


def make_trailer(data_size: int, reassembly_size: int = 100, trailer_size: int = 60) -> Trailer:
    return Trailer("super columnar", "csup", 1, (data_size, reassembly_size), 1 << 26,
                   1 << 22, trailer_size)


def make_meta(super_types: tuple[Type, ...], columns: tuple, super_column: tuple[Segment, ...],
              data_size: int | None = None) -> FileMeta:
    """A FileMeta whose sections add up (reassembly 100 bytes, trailer 60)."""
    if data_size is None:
        ends = [s.end for s in super_column]
        from csup_async.format.meta import iter_segmaps

        for c in columns:
            for sm in iter_segmaps(c):
                ends += [s.end for s in sm]
        data_size = max(ends, default=0)
    return FileMeta(make_trailer(data_size), super_types, super_column, columns,
                    data_size + 160)


def record(**fields: tuple[Type, object, tuple[Segment, ...]]) -> tuple[RecordType, RecordColumn]:
    """``record(a=(INT64, column, presence))`` -> the record type and column."""
    t = RecordType(tuple(Field(n, ft) for n, (ft, _, _) in fields.items()))
    c = RecordColumn(tuple(FieldColumn(n, col, pres)  # type: ignore[arg-type]
                           for n, (_, col, pres) in fields.items()))
    return t, c


@st.composite
def _type_and_skel(draw: st.DrawFn, depth: int, streams: list[StreamInfo], sid: int,
                   rpath: tuple[str, ...], below: bool, top: bool = False
                   ) -> tuple[Type, _Skel | None]:
    """A random type and a matching column skeleton; registers its streams.

    ``rpath`` is the record-field path of the column being drawn and ``below``
    whether an array/map/union lies above it (then paths cannot reach it).
    """

    def new_stream(presence: bool, where: tuple[str, ...] = rpath) -> int:
        n = draw(st.integers(0 if presence else 1, 3))
        sizes = draw(st.lists(st.sampled_from([1, 7, 100, 4096, 70_000, 3_000_000]),
                              min_size=n, max_size=n))
        streams.append(StreamInfo(sid, where, presence and not below, below, sizes))
        return len(streams) - 1

    kinds = ["prim"] if depth <= 0 else ["prim", "record", "record", "array", "map", "union"]
    kind = "record" if top and draw(st.integers(0, 4)) else draw(st.sampled_from(kinds))
    t: Type
    skel: _Skel | None
    if kind == "prim":
        t = draw(st.sampled_from([INT64, STRING, INT32]))
        skel = _Skel("prim", new_stream(False))
    elif kind == "record":
        names = draw(st.lists(st.sampled_from(FIELD_NAMES), min_size=1, max_size=3, unique=True))
        fields, fskels = [], []
        for name in names:
            fpath = rpath if below else (*rpath, name)
            if draw(st.integers(0, 6)) == 0:  # every value null: no column, no presence
                mark = len(streams)
                ft, _ = draw(_type_and_skel(depth - 1, streams, sid, fpath, below))
                del streams[mark:]
                fskels.append((name, None, -1))
            else:
                pres = new_stream(True, fpath)
                ft, fs = draw(_type_and_skel(depth - 1, streams, sid, fpath, below))
                fskels.append((name, fs, pres))
            fields.append(Field(name, ft))
        t = RecordType(tuple(fields))
        skel = _Skel("record", fskels)
    elif kind == "array":
        lengths = new_stream(False)
        et, es = draw(_type_and_skel(depth - 1, streams, sid, rpath, True))
        t = draw(st.sampled_from([ArrayType(et), SetType(et)]))
        skel = _Skel("array", es, lengths)
    elif kind == "map":
        lengths = new_stream(False)
        kt, ks = draw(_type_and_skel(0, streams, sid, rpath, True))
        vt, vs = draw(_type_and_skel(depth - 1, streams, sid, rpath, True))
        t = MapType(kt, vt)
        skel = _Skel("map", ks, vs, lengths)
    else:
        tags = new_stream(False)
        members: list[Type] = []
        mskels: list[_Skel | None] = []
        for mt in draw(st.lists(st.sampled_from([INT64, STRING, INT32]), min_size=1,
                                max_size=2, unique=True)):
            mark = len(streams)
            ms = _Skel("prim", len(streams))
            streams.append(StreamInfo(sid, rpath, False, True, [draw(st.integers(1, 9000))]))
            if draw(st.integers(0, 4)) == 0:  # a member that never occurs has no column
                del streams[mark:]
                ms = None
            members.append(mt)
            mskels.append(ms)
        mark = len(streams)
        ct, cs = draw(_type_and_skel(depth - 1, streams, sid, rpath, True))
        core = ct
        while isinstance(core, (NamedType, ErrorType)):
            core = core.inner
        if ct in members or isinstance(core, UnionType):
            del streams[mark:]
        else:
            members.append(ct)
            mskels.append(cs)
        if len(members) < 2:
            members.append(ArrayType(STRING))
            mskels.append(None)
        t = UnionType(tuple(members))
        skel = _Skel("union", mskels, tags)
    if kind != "prim" and draw(st.integers(0, 4)) == 0:
        # our convention for null complex values that no presence covers
        skel = _Skel("nulls", skel, new_stream(True))
    wrap = draw(st.integers(0, 7))
    if wrap == 0:
        t = NamedType("n" + str(depth), t)
    elif wrap == 1:
        t = ErrorType(t)
    return t, skel


def _build(skel: _Skel | None, streams: list[StreamInfo]):  # -> AnyColumn | None
    if skel is None:
        return None

    def segs(i: int) -> tuple[Segment, ...]:
        return () if i < 0 else streams[i].segments

    k, p = skel.kind, skel.parts
    if k == "prim":
        return PrimitiveColumn(segs(p[0]))  # type: ignore[arg-type]
    if k == "record":
        return RecordColumn(tuple(
            FieldColumn(name, _build(fs, streams), () if fs is None else segs(pres))
            for name, fs, pres in p[0]))  # type: ignore[attr-defined]
    if k == "array":
        return ArrayColumn(_build(p[0], streams), segs(p[1]))  # type: ignore[arg-type]
    if k == "map":
        return MapColumn(_build(p[0], streams), _build(p[1], streams),  # type: ignore[arg-type]
                         segs(p[2]))  # type: ignore[arg-type]
    if k == "union":
        return UnionColumn(tuple(_build(c, streams) for c in p[0]),  # type: ignore[attr-defined]
                           segs(p[1]))  # type: ignore[arg-type]
    assert k == "nulls"
    return NullsColumn(_build(p[0], streams), segs(p[1]))  # type: ignore[arg-type]


@dataclass
class DrawnFile:
    meta: FileMeta
    streams: list[StreamInfo]  # the super column is the last one, super_id -1
    types: tuple[Type, ...]


@st.composite
def metas(draw: st.DrawFn, max_types: int = 3, max_depth: int = 3) -> DrawnFile:
    streams: list[StreamInfo] = []
    types: list[Type] = []
    skels: list[_Skel | None] = []
    for _ in range(draw(st.integers(1, max_types))):
        mark = len(streams)
        t, sk = draw(_type_and_skel(draw(st.integers(0, max_depth)), streams, len(types), (),
                                    False, top=True))
        if t in types:  # super types are distinct
            del streams[mark:]
            continue
        if draw(st.integers(0, 9)) == 0:  # a top-level column may be absent
            del streams[mark:]
            sk = None
        types.append(t)
        skels.append(sk)
    streams.append(StreamInfo(-1, (), False, False, [draw(st.integers(1, 5000))]))
    # layout: where each segment goes in the data section
    slots = [(i, k) for i, s in enumerate(streams) for k in range(len(s.lengths))]
    order = draw(st.sampled_from(["random", "flushes", "columns"]))
    if order == "random":
        slots = draw(st.permutations(slots))
    elif order == "flushes":
        slots.sort(key=lambda ik: (ik[1], ik[0]))
    junk = draw(st.sampled_from([0, 0, 1, 5000, 2_000_000]))
    offset = 0
    placed: dict[tuple[int, int], Segment] = {}
    for i, k in slots:
        if junk:
            offset += draw(st.integers(0, junk))
        n = streams[i].lengths[k]
        placed[i, k] = Segment(offset, n, n * 2, 1 if n > 100 else 0)
        offset += n
    for i, s in enumerate(streams):
        s.segments = tuple(placed[i, k] for k in range(len(s.lengths)))
    if len(streams) > 2 and draw(st.integers(0, 4)) == 0:
        # the same segment in two streams: it must be read once
        a, b = draw(st.permutations(range(len(streams) - 1)))[:2]
        if streams[a].segments and streams[b].segments:
            streams[b].segments = (*streams[b].segments, streams[a].segments[0])
    columns = tuple(_build(sk, streams) for sk in skels)
    meta = make_meta(tuple(types), columns, streams[-1].segments, data_size=offset)
    return DrawnFile(meta, streams, tuple(types))


def type_paths(t: Type) -> set[tuple[str, ...]]:
    """Every record-field path a value of type ``t`` has ("" included as ())."""
    out: set[tuple[str, ...]] = {()}
    while isinstance(t, (NamedType, ErrorType)):
        t = t.inner
    if isinstance(t, RecordType):
        for f in t.fields:
            out |= {(f.name, *p) for p in type_paths(f.type)}
    return out


def union(ranges: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """Merge half-open ``(start, end)`` intervals (touching ones join)."""
    out: list[list[int]] = []
    for a, b in sorted(ranges):
        if b <= a:
            continue
        if out and a <= out[-1][1]:
            out[-1][1] = max(out[-1][1], b)
        else:
            out.append([a, b])
    return [(a, b) for a, b in out]


def subtract(runs: list[tuple[int, int]], cut: tuple[int, int] | None) -> list[tuple[int, int]]:
    if cut is None or cut[1] == 0:
        return runs
    a, b = cut[0], cut[0] + cut[1]
    out = []
    for s, e in runs:
        if s < a:
            out.append((s, min(e, a)))
        if e > b:
            out.append((max(s, b), e))
    return [(s, e) for s, e in out if e > s]


def expected_cap(profile, total: int) -> int:  # type: ignore[no-untyped-def]
    """The documented request size cap, computed here from the profile's fields."""
    share = -(-total // profile.concurrency)
    return min(profile.max_request, max(profile.split_size, share))


def check_requests(segments, requests, profile, available=None,  # type: ignore[no-untyped-def]
                   check_maximal: bool = True) -> dict[str, int]:
    """Assert every documented guarantee of the coalescer; return the byte counts."""
    if available is not None and available[1] == 0:
        available = None
    needed_segs = {s for s in segments if s.length > 0}
    runs = union([(s.offset, s.end) for s in needed_segs])
    needed = sum(e - s for s, e in runs)
    to_read_runs = subtract(runs, available)
    to_read = sum(e - s for s, e in to_read_runs)
    cap = expected_cap(profile, to_read)
    a_lo, a_hi = (available[0], available[0] + available[1]) if available else (0, 0)
    n_unserved = sum(not r.served for r in requests)

    # sorted, disjoint, non-empty
    for r in requests:
        assert r.length > 0
    for r1, r2 in itertools.pairwise(requests):
        assert r1.end <= r2.offset, (r1.offset, r1.length, r2.offset)

    # pieces: each segment's bytes exactly once, at the right place
    got: dict = {}
    for r in requests:
        covered = []
        for seg, at, start, n in r.pieces:
            assert n > 0
            assert at >= 0 and at + n <= r.length
            assert start >= 0 and start + n <= seg.length
            assert r.offset + at == seg.offset + start
            got.setdefault(seg, []).append((start, n))
            covered.append((r.offset + at, r.offset + at + n))
        cov = union(covered)
        assert cov, "a request carries no bytes"
        # a request starts and ends on needed bytes
        assert cov[0][0] == r.offset and cov[-1][1] == r.end
        if r.served:
            assert a_lo <= r.offset and r.end <= a_hi
            continue
        assert r.end <= a_lo or r.offset >= a_hi, "a request to read overlaps available bytes"
        if profile.min_part and n_unserved <= profile.concurrency:
            assert r.length <= profile.max_request  # one wave, spread (step 4)
        else:
            assert r.length <= cap, (r.length, cap)
        one_wave = profile.min_part and n_unserved <= profile.concurrency
        for (_, e1), (s2, _) in itertools.pairwise(cov):  # (step 5: up to the break-even)
            assert s2 - e1 <= (profile.breakeven if one_wave else profile.gap_limit)
    assert set(got) == needed_segs
    for seg, parts in got.items():
        pos = 0
        for start, n in sorted(parts):
            assert start == pos, f"segment {seg} has a hole or overlap at {pos}"
            pos += n
        assert pos == seg.length

    unserved = [r for r in requests if not r.served]
    read = sum(r.length for r in unserved)
    assert read >= to_read
    x = profile.max_amplification
    if x is not None:
        assert read - to_read <= x * to_read
    elif check_maximal and not (profile.min_part and len(unserved) <= profile.concurrency):
        # (a scan spread over idle connections is split on purpose: see test_spread_*)
        # nothing left to merge: joining neighbours would break the cap
        for r1, r2 in itertools.pairwise(unserved):
            if available and r1.end <= a_lo and r2.offset >= a_hi:
                continue
            if r2.offset - r1.end <= profile.gap_limit:
                run_end = next(e for s, e in to_read_runs if s <= r2.offset < e)
                assert run_end - r1.offset > cap, (r1, r2.offset, cap)
    return {"needed": needed, "to_read": to_read, "read": read, "cap": cap}
