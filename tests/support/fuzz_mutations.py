"""Semantic mutations of a decoded CSUP file (see tests/support/fuzz_model.py).

Each family is a function ``(model, rng) -> iterator of (label, file bytes)``;
the label names the stream and the change, so a failing case says what it was
(``col0/fields/1/presence:runs+1``).  The families:

- ``count``: a stream with one value too many (a value written twice) or too few;
- ``presence``: runs summing one too high or low, a run of 0 flipping the rest,
  thousands of zero-length run pairs (a valid file meaning the same rows), runs
  negative or huge, runs added to a field that had none, or removed;
- ``lengths``: an array/map length that overruns or underruns its elements,
  negative, huge;
- ``tags``: union tags out of range, negative, or moved to another member;
- ``super``: super IDs out of range, negative, moved to another type, a super
  column one short or one long;
- ``data``: a segment's stored values re-tagged (a body one byte longer or
  shorter), a value changed to null, a value cut by the segment's end, a tag
  byte bumped; every segmap consistent with the new bytes;
- ``shared-segments``: one stream's segmap pointing at another's (a presence column at
  a value column, two int columns on one segment, lengths on presence...);
- ``segments``: a stream's segments reversed, swapped, one repeated, one dropped;
- ``sizes``: mem_length one more/less, doubled; the LZ4 flag flipped either way;
- ``types``: duplicate field names, a field retyped, super types wrapped in
  deep named types, one name for two different types, column fields or union
  members in another order than their type's;
- ``resegment`` (valid, the seed's rows): streams re-cut into other segments,
  LZ4 or raw at random, the data section shuffled;
- ``shifted-counts`` (tests/support/fuzz_counts.py): segment ``count`` statistics that
  move values between two segments of a stream, the total unchanged (what row
  selection maps rows by);
- ``valid`` (valid, other rows): adjacent rows of two super types swapped, an
  array element moved to the next array, adjacent union values swapped, a
  present value made null;
- ``statistics`` (valid, the seed's rows): one value stream's segment statistics
  lie (min above max, bounds of another type, nulls above count, a NaN bound,
  NaT as a minimum: tests/support/fuzz_statistics.py); filtered reads must keep
  every matching row.
"""

from __future__ import annotations

import itertools
import random
from collections.abc import Callable, Iterator
from dataclasses import replace
from typing import Any

from csup_async.format import bsup
from csup_async.format.meta import (
    COMPRESSION_LZ4,
    COMPRESSION_NONE,
    FieldColumn,
    PrimitiveColumn,
    RecordColumn,
    Segment,
)
from csup_async.model.types import (
    FLOAT64,
    INT64,
    PRIMITIVE_BY_NAME,
    STRING,
    Field,
    NamedType,
    PrimitiveType,
    RecordType,
    Type,
    UnionType,
)
from tests.support.fuzz_counts import shifted_counts
from tests.support.fuzz_model import (
    Laid,
    Model,
    Seg,
    StreamRef,
    get,
    ints,
    is_int_type,
    layout,
    map_streams,
    put,
    streams,
    values,
    with_ints,
    with_values,
)
from tests.support.fuzz_statistics import statistics

Case = tuple[str, "Model | Laid"]  # encoded (``.encode()``) only if the case is picked
Family = Callable[[Model, random.Random], Iterator[Case]]
INT_KINDS = ("super", "presence", "lengths", "tags")
FIRST = 3  # the first cases of each family on each seed are always run (the rest sampled)


def _int_stream(ref: StreamRef) -> bool:
    return ref.kind in INT_KINDS or (ref.kind == "values" and is_int_type(ref.type))


def _picks(n: int, rng: random.Random) -> list[int]:
    """Positions to mutate in a stream of n values: first, last, one inside."""
    if n <= 0:
        return []
    return sorted({0, n - 1, rng.randrange(n)})


def _ints_case(model: Model, ref: StreamRef, label: str, vals: list[int | None]) -> Case:
    return f"{ref.name}:{label}", put(model, ref, with_ints(get(model, ref), vals))


# ------------------------------------------------------------------ count ---
def count(model: Model, rng: random.Random) -> Iterator[Case]:
    for ref in streams(model):
        stream = get(model, ref)
        vals = values(stream)
        for k in _picks(len(vals), rng):
            yield (f"{ref.name}:dup[{k}]",
                   put(model, ref, with_values(stream, vals[:k + 1] + vals[k:])))
            yield (f"{ref.name}:drop[{k}]",
                   put(model, ref, with_values(stream, vals[:k] + vals[k + 1:])))


# --------------------------------------------------------------- presence ---
def presence(model: Model, rng: random.Random) -> Iterator[Case]:
    rows = len(values(model.super_column))
    for ref in streams(model):
        if ref.kind != "presence":
            continue
        runs = ints(get(model, ref))
        if not runs:  # a field with no nulls: give it runs that do or do not fit
            yield _ints_case(model, ref, "added-all-present", [rows])
            yield _ints_case(model, ref, "added-one-absent", [max(rows - 1, 0), 1])
            yield _ints_case(model, ref, "added-too-long", [rows + 1])
            continue
        k = rng.randrange(len(runs))
        yield from [
            _ints_case(model, ref, "runs+1", _at(runs, -1, (runs[-1] or 0) + 1)),
            _ints_case(model, ref, "runs-1", _at(runs, -1, max((runs[-1] or 0) - 1, 0))),
            _ints_case(model, ref, f"run[{k}]+1", _at(runs, k, (runs[k] or 0) + 1)),
            _ints_case(model, ref, "zero-run-flips", [0, *runs]),
            _ints_case(model, ref, "zero-pairs-x2000",
                       runs[:k] + [0, 0] * 2000 + runs[k:]),  # valid: the same rows
            _ints_case(model, ref, "zero-runs-trailing", [*runs, 0, 0, 0]),
            _ints_case(model, ref, "run-negative", _at(runs, k, -1)),
            _ints_case(model, ref, "run-2^31-1", _at(runs, k, (1 << 31) - 1)),
            _ints_case(model, ref, "run-2^40", _at(runs, k, 1 << 40)),
            _ints_case(model, ref, "run-null", _at(runs, k, None)),
            (f"{ref.name}:removed", put(model, ref, ())),
        ]


# ---------------------------------------------------------------- lengths ---
def lengths(model: Model, rng: random.Random) -> Iterator[Case]:
    for ref in streams(model):
        if ref.kind != "lengths":
            continue
        lens = ints(get(model, ref))
        for k in _picks(len(lens), rng):
            v = lens[k] or 0

            yield _ints_case(model, ref, f"len[{k}]+1", _at(lens, k, v + 1))
            yield _ints_case(model, ref, f"len[{k}]-1", _at(lens, k, v - 1))
            yield _ints_case(model, ref, f"len[{k}]+1000", _at(lens, k, v + 1000))
        if lens:
            yield _ints_case(model, ref, "len-negative", _at(lens, 0, -3))
            yield _ints_case(model, ref, "len-2^31-1", _at(lens, 0, (1 << 31) - 1))
            yield _ints_case(model, ref, "len-2^33", _at(lens, 0, 1 << 33))
            yield _ints_case(model, ref, "len-moved", [(lens[0] or 0) + 1, *lens[1:-1],
                                                       (lens[-1] or 0) - 1])
            yield _ints_case(model, ref, "len-null", _at(lens, 0, None))


# ------------------------------------------------------------------- tags ---
def tags(model: Model, rng: random.Random) -> Iterator[Case]:
    for ref in streams(model):
        if ref.kind != "tags":
            continue
        n = len(ref.type.types) if isinstance(ref.type, UnionType) else 2
        tg = ints(get(model, ref))
        for k in _picks(len(tg), rng):
            yield _ints_case(model, ref, f"tag[{k}]={n}", _at(tg, k, n))
            yield _ints_case(model, ref, f"tag[{k}]=-1", _at(tg, k, -1))
            yield _ints_case(model, ref, f"tag[{k}]=other", _at(tg, k, ((tg[k] or 0) + 1) % n))
            yield _ints_case(model, ref, f"tag[{k}]=2^31-1", _at(tg, k, (1 << 31) - 1))
            yield _ints_case(model, ref, f"tag[{k}]=null", _at(tg, k, None))


# ------------------------------------------------------------------ super ---
def super_ids(model: Model, rng: random.Random) -> Iterator[Case]:
    ref = next(streams(model))
    n = len(model.types)
    ids = ints(get(model, ref))
    for k in _picks(len(ids), rng):
        yield _ints_case(model, ref, f"id[{k}]={n}", _at(ids, k, n))
        yield _ints_case(model, ref, f"id[{k}]=-1", _at(ids, k, -1))
        yield _ints_case(model, ref, f"id[{k}]=2^31-1", _at(ids, k, (1 << 31) - 1))
        yield _ints_case(model, ref, f"id[{k}]=null", _at(ids, k, None))
        if n > 1:
            yield _ints_case(model, ref, f"id[{k}]=other", _at(ids, k, ((ids[k] or 0) + 1) % n))
    if ids:
        yield _ints_case(model, ref, "short", ids[:-1])
        yield _ints_case(model, ref, "short-half", ids[: len(ids) // 2])
        yield _ints_case(model, ref, "long", [*ids, ids[-1]])
        yield _ints_case(model, ref, "empty", [])


# ------------------------------------------------------------------- data ---
def data(model: Model, rng: random.Random) -> Iterator[Case]:
    """Changes to a segment's stored bytes, with the segmap kept exact."""
    for ref in streams(model):
        stream = get(model, ref)
        vals = values(stream)
        for k in _picks(len(vals), rng):
            v = vals[k]
            if ref.kind == "values":
                yield (f"{ref.name}:null[{k}]",
                       put(model, ref, with_values(stream, _at(vals, k, None))))
            if v is not None:
                yield (f"{ref.name}:longer[{k}]", put(model, ref, with_values(
                    stream, _at(vals, k, v + b"\x00"))))
                yield (f"{ref.name}:longer9[{k}]", put(model, ref, with_values(
                    stream, _at(vals, k, v + b"\x01" * 9))))
                if v:
                    yield (f"{ref.name}:shorter[{k}]", put(model, ref, with_values(
                        stream, _at(vals, k, v[:-1]))))
                    yield (f"{ref.name}:empty[{k}]", put(model, ref, with_values(
                        stream, _at(vals, k, b""))))
            if ref.kind == "values" and not is_int_type(ref.type):
                yield (f"{ref.name}:int-in[{k}]", put(model, ref, with_values(
                    stream, _at(vals, k, bsup.encode_int(-12345)))))
            if ref.kind == "values" and v is not None:
                yield (f"{ref.name}:bad-utf8[{k}]", put(model, ref, with_values(
                    stream, _at(vals, k, b"\xff\xfe" + v))))
        for si, seg in enumerate(stream):
            raw = seg.stored()
            if not raw:
                continue
            cut = replace(seg, raw=raw[:-1])
            yield (f"{ref.name}[{si}]:cut-last-byte",
                   put(model, ref, _seg_at(stream, si, cut)))
            bumped = bytearray(raw)
            bumped[0] = (bumped[0] + 1) & 0x7F  # the first value's tag claims one more byte
            yield (f"{ref.name}[{si}]:tag+1", put(model, ref, _seg_at(
                stream, si, replace(seg, raw=bytes(bumped)))))
            yield (f"{ref.name}[{si}]:tag-varint-open", put(model, ref, _seg_at(
                stream, si, replace(seg, raw=raw + b"\x80"))))


def _at(vals: list[Any], k: int, v: Any) -> list[Any]:
    """A copy of ``vals`` with position k set to v."""
    out = list(vals)
    out[k] = v
    return out


def _seg_at(stream: tuple[Seg, ...], i: int, seg: Seg) -> tuple[Seg, ...]:
    return _tuple_at(stream, i, seg)


# ------------------------------------------------ physical segment lies ---
def _laid_case(laid: Laid, ref: StreamRef, label: str, segmap: tuple[Segment, ...]) -> Case:
    return f"{ref.name}:{label}", put(laid, ref, segmap)


def shared(model: Model, rng: random.Random) -> Iterator[Case]:
    """One stream's segmap pointing at another's.  The pairs the issue names come first
    (``FIRST`` of them are always run): a field's presence on its own values, one int
    column on another's segments; then every presence on values and int on int pair,
    and a sample of the others."""
    laid = layout(model)
    refs = [r for r in streams(laid) if get(laid, r)]
    empty = [r for r in streams(laid) if not get(laid, r) and r.kind == "presence"]
    pairs = [(d, s) for d in [*refs, *empty] for s in refs if s.path != d.path]
    own = [(d, s) for d, s in pairs if d.kind == "presence" and s.kind == "values"
           and s.path[: len(d.path) - 1] == d.path[:-1]]  # fields/i/presence on fields/i/...
    ints_ = [(d, s) for d, s in pairs if d.kind == s.kind == "values" and is_int_type(d.type)
             and is_int_type(s.type)]
    first = own[:1] + ints_[:1] + [p for p in pairs if p[0].kind == "lengths"][:1]
    rest = [p for p in pairs if p not in first and (
        (p[0].kind == "presence" and p[1].kind == "values")
        or (_int_stream(p[0]) and _int_stream(p[1])) or rng.random() < 0.15)]
    for dst, src in first + rest:
        yield f"{dst.name}:shares:{src.name}", put(laid, dst, get(laid, src))


def segments(model: Model, rng: random.Random) -> Iterator[Case]:
    laid = layout(model)
    for ref in streams(laid):
        segmap = get(laid, ref)
        if len(segmap) > 1:
            yield _laid_case(laid, ref, "reversed", segmap[::-1])
            i = rng.randrange(len(segmap) - 1)
            sw = list(segmap)
            sw[i], sw[i + 1] = sw[i + 1], sw[i]
            yield _laid_case(laid, ref, f"swapped[{i}]", tuple(sw))
            yield _laid_case(laid, ref, "last-dropped", segmap[:-1])
            yield _laid_case(laid, ref, "first-dropped", segmap[1:])
        if segmap:
            i = rng.randrange(len(segmap))
            yield _laid_case(laid, ref, f"repeated[{i}]",
                             segmap[: i + 1] + segmap[i:])
            yield _laid_case(laid, ref, "first-as-last", segmap + segmap[:1])


def sizes(model: Model, rng: random.Random) -> Iterator[Case]:
    laid = layout(model)
    for ref in streams(laid):
        segmap = get(laid, ref)
        for i in _picks(len(segmap), rng):
            s = segmap[i]

            def at(new: Segment, i: int = i, segmap: tuple[Segment, ...] = segmap
                   ) -> tuple[Segment, ...]:
                return _tuple_at(segmap, i, new)

            yield _laid_case(laid, ref, f"[{i}]mem+1", at(replace(s, mem_length=s.mem_length + 1)))
            yield _laid_case(laid, ref, f"[{i}]mem-1", at(replace(s, mem_length=s.mem_length - 1)))
            yield _laid_case(laid, ref, f"[{i}]mem*2", at(replace(s, mem_length=s.mem_length * 2)))
            yield _laid_case(laid, ref, f"[{i}]mem-0", at(replace(s, mem_length=0)))
            if s.compression == COMPRESSION_NONE:
                yield _laid_case(laid, ref, f"[{i}]lz4-flag-on",
                                 at(replace(s, compression=COMPRESSION_LZ4)))
                yield _laid_case(laid, ref, f"[{i}]lz4-flag-on-mem*4",
                                 at(replace(s, compression=COMPRESSION_LZ4,
                                            mem_length=s.mem_length * 4)))
            else:
                yield _laid_case(laid, ref, f"[{i}]lz4-flag-off",
                                 at(replace(s, compression=COMPRESSION_NONE)))
                yield _laid_case(laid, ref, f"[{i}]lz4-flag-off-mem=len",
                                 at(replace(s, compression=COMPRESSION_NONE,
                                            mem_length=s.length)))


# --------------------------------------------------------------- resegment ---
def resegment(model: Model, rng: random.Random) -> Iterator[Case]:
    """Valid files holding exactly the seed's rows: streams cut into other segments (one
    value each, random cuts, all in one), LZ4 or raw per segment at random, the data
    section in another order.  Every read must give the seed's rows."""
    def recut(how: str) -> Model:
        def one(stream: Any) -> Any:
            vals = values(stream)
            if not vals:
                return stream
            if how == "one-each":
                cuts = list(range(1, len(vals)))
            elif how == "all-in-one":
                cuts = []
            else:
                cuts = sorted(rng.sample(range(1, len(vals)), min(len(vals) - 1, 3))) \
                    if len(vals) > 1 else []
            bounds = [0, *cuts, len(vals)]
            return tuple(Seg(tuple(vals[a:b]), how != "all-in-one" and rng.random() < 0.5)
                         for a, b in itertools.pairwise(bounds))
        return replace(model, super_column=one(model.super_column),
                       columns=tuple(map_streams(c, one) for c in model.columns))

    for how in ("one-each", "random-cuts", "all-in-one"):
        yield f"resegment:{how}", recut(how)
        yield f"resegment:{how}:shuffled", layout(recut(how), shuffle=rng)
    yield "layout:shuffled", layout(model, shuffle=rng)
    yield "layout:all-lz4", _all_lz4(model, True)
    yield "layout:all-raw", _all_lz4(model, False)


def _all_lz4(model: Model, lz4: bool) -> Model:
    def one(stream: Any) -> Any:
        return tuple(replace(s, lz4=lz4) for s in stream)

    return replace(model, super_column=one(model.super_column),
                   columns=tuple(map_streams(c, one) for c in model.columns))


# ------------------------------------------------------------ valid edits ---
def valid_edits(model: Model, rng: random.Random) -> Iterator[Case]:
    """Valid files with other rows: two adjacent rows of different super types swapped,
    an element moved from one array to the next, two adjacent union values of different
    members swapped, a present field value made null (its value removed).  Every read
    must succeed, and agree."""
    for ref in streams(model):
        stream = get(model, ref)
        if ref.kind in ("super", "tags"):
            ids = ints(stream)
            swaps = [k for k in range(len(ids) - 1) if ids[k] != ids[k + 1]]
            for k in sorted({*swaps[:1], *rng.sample(swaps, min(len(swaps), 2))}):
                yield _ints_case(model, ref, f"swap[{k}]",
                                 [*ids[:k], ids[k + 1], ids[k], *ids[k + 2:]])
        elif ref.kind == "lengths":
            lens = ints(stream)
            moves = [k for k in range(len(lens) - 1) if (lens[k + 1] or 0) > 0]
            for k in sorted({*moves[:1], *rng.sample(moves, min(len(moves), 2))}):
                moved = _at(lens, k, (lens[k] or 0) + 1)
                yield _ints_case(model, ref, f"element-moved[{k}]",
                                 _at(moved, k + 1, (lens[k + 1] or 0) - 1))
        elif ref.kind == "presence":
            yield from _made_null(model, ref, rng)


def _made_null(model: Model, ref: StreamRef, rng: random.Random) -> Iterator[Case]:
    """A present value of a primitive field made null: its runs and values rewritten."""
    field = StreamRef(ref.path[:-1], "field", None, ref.top)
    fc = get(model, field)
    if not isinstance(fc.column, PrimitiveColumn):
        return
    vals = values(fc.column.segmap)
    runs = [r or 0 for r in ints(fc.presence)] or [len(vals)]
    present: list[bool] = []
    for i, r in enumerate(runs):
        present += [i % 2 == 0] * r
    where = [i for i, p in enumerate(present) if p]
    if len(where) < 2:
        return
    for j in {where[0], rng.choice(where)}:
        rank = sum(present[:j])
        present[j] = False
        new_runs, state, n = [], True, 0
        for p in present:
            if p == state:
                n += 1
            else:
                new_runs.append(n)
                state, n = p, 1
        new_runs.append(n)
        present[j] = True
        col = PrimitiveColumn(with_values(fc.column.segmap, vals[:rank] + vals[rank + 1:]))
        new = replace(fc, column=col, presence=with_ints(fc.presence or (Seg(()),), new_runs))
        yield f"{field.name}:row[{j}]-made-null", put(model, field, new)


# ------------------------------------------------------------------ types ---
def type_changes(model: Model, rng: random.Random) -> Iterator[Case]:
    for ti, t in enumerate(model.types):
        col = model.columns[ti]
        if isinstance(t, RecordType) and isinstance(col, RecordColumn) and len(t.fields) > 1:
            for i, j in sorted({(0, 1), (1, 0), (0, len(t.fields) - 1)}):
                if i == j:
                    continue
                name = t.fields[i].name
                fields = list(t.fields)
                fields[j] = Field(name, fields[j].type)
                cfields = list(col.fields)
                cfields[j] = FieldColumn(name, cfields[j].column, cfields[j].presence)
                yield (f"type{ti}:dup-name-{name}@{j}", _retyped(
                    model, ti, RecordType(tuple(fields)), RecordColumn(tuple(cfields))))
            # the column tree's fields in another order than the type's
            yield (f"type{ti}:column-fields-swapped", _retyped(
                model, ti, t, RecordColumn((col.fields[1], col.fields[0], *col.fields[2:]))))
            # field names renamed only in the column tree
            cfields = list(col.fields)
            cfields[0] = FieldColumn(cfields[0].name + "_", cfields[0].column,
                                     cfields[0].presence)
            yield (f"type{ti}:column-name-differs", _retyped(
                model, ti, t, RecordColumn(tuple(cfields))))
            for fi, f in enumerate(t.fields):
                if isinstance(f.type, PrimitiveType):
                    for new in _retypes(f.type):
                        fields = list(t.fields)
                        fields[fi] = Field(f.name, new)
                        yield (f"type{ti}:{f.name}:{f.type.name}->{new.name}",
                            replace(model, types=_tuple_at(model.types, ti,
                                                           RecordType(tuple(fields)))))
                    break
        for depth in (3, 98, 99, 100, 101, 300):
            yield (f"type{ti}:named-x{depth}", replace(
                model, types=_tuple_at(model.types, ti, _named(t, depth, f"t{ti}_"))))
    for ref in streams(model):
        if ref.kind == "tags":  # a union column's members in another order than its type's
            node = StreamRef(ref.path[:-1], "union", None, ref.top)
            union = get(model, node)
            if len(union.columns) > 1:
                yield (f"{node.name}:members-swapped",
                       put(model, node, replace(union, columns=union.columns[::-1])))
    if len(model.types) > 1:
        # one name for every super type: a named type redefined in one stream
        yield ("all-types-named-same", replace(
            model, types=tuple(NamedType("same", t) for t in model.types)))


def _retypes(t: PrimitiveType) -> list[Type]:
    """Other types for a field's values (its bytes then read as them)."""
    if t.name == "string":
        return [INT64, PRIMITIVE_BY_NAME["bytes"], FLOAT64]
    if t.name.startswith("int"):
        return [STRING, PRIMITIVE_BY_NAME["int8"], FLOAT64, PRIMITIVE_BY_NAME["bool"],
                PRIMITIVE_BY_NAME["ip"]]
    return [STRING, INT64]


def _named(t: Type, depth: int, prefix: str) -> Type:
    for i in range(depth):
        t = NamedType(f"{prefix}{i}", t)
    return t


def _tuple_at(items: tuple[Any, ...], i: int, v: Any) -> tuple[Any, ...]:
    return tuple(_at(list(items), i, v))


def _retyped(model: Model, ti: int, t: Type, col: Any) -> Model:
    return replace(model, types=_tuple_at(model.types, ti, t),
                   columns=_tuple_at(model.columns, ti, col))


FAMILIES: dict[str, Family] = {
    "count": count, "presence": presence, "lengths": lengths, "tags": tags,
    "super": super_ids, "data": data, "shared-segments": shared, "segments": segments,
    "sizes": sizes, "types": type_changes, "resegment": resegment, "valid": valid_edits,
    "shifted-counts": shifted_counts, "statistics": statistics,
}
# Families whose files are valid: every read must succeed.
VALID = {"resegment", "valid", "statistics"}
# Families whose files are valid and hold the seed's rows: every read must give them.
SAME_ROWS = {"resegment", "statistics"}
