"""Planning a selection of rows: rows and ``limit=`` cut to the segments holding them
(:func:`plan_rows`), a filter judged on the segment statistics into zones and waves
(:func:`plan_filter`), and the pieces a limited or batched filtered read takes
(:func:`surviving_runs`, :func:`next_piece`).  Pure: metadata and plans in, plans out.

Every read is a :class:`Wave`, planned whole before it runs; ``csup_async.scan.selection``
runs waves and plans nothing.  What is known before any I/O is planned then
(:class:`FilterWork`: the first wave, the second wave's columns planned whole, a
limit's surviving runs); a step that depends on rows already read is one pure call
per wave (:func:`plan_next`, :func:`plan_piece`, :func:`plan_batch`).
"""

from __future__ import annotations

import bisect
import dataclasses
import itertools
from collections.abc import Sequence
from typing import Any

import numpy as np

from csup_async.format.colvalue import segment_stats
from csup_async.format.meta import FileMeta
from csup_async.model.types import NULL, PrimitiveType

from . import plan as planning  # plan_scan by attribute: one seam to count plans by
from .coalescing import plan_ranges
from .filters import Expr, Truth, bind, columns_of
from .literals import FilterError
from .paths import format_path
from .plan import ScanPlan
from .profiles import Profile, with_amplification
from .projection import path_type
from .selection import (
    FilterPlan,
    RowMap,
    RowRanges,
    Zone,
    column_stats,
    late_saving,
    leaf_stream,
    plan_zones,
    prefer_two_waves,
    ranges_from_indices,
    select_segments,
    selectable_segmaps,
    type_view,
)

#: A selection's segments lie apart; merging the gaps between them (which a whole-column
#: scan does freely) may add at most this fraction of the needed bytes.
SELECTION_GAP_BYTES = 0.25
_TRUTHS = (Truth.FALSE, Truth.MAYBE, Truth.TRUE)


def plan_rows(meta: FileMeta, plan: ScanPlan, ranges: RowRanges, *,
              verify_counts: bool = True, rowmap: RowMap | None = None
              ) -> tuple[ScanPlan, dict[int, frozenset[int]]]:
    """``plan`` cut down to the segments ``ranges`` need, and the kept segments of each
    direct value stream (what the cursor tree reads; the rest it skips).

    ``verify_counts`` (``take``, ``rows=``, ``limit=``): a value stream keeps every
    segment up to the last one holding a selected row, so each ``count`` that places the
    rows is checked against its decoded values (``select_segments(prefix=True)``): a
    file whose counts shift between segments is a FormatError naming the column and
    segment, never another row.  Only segments past the last selected row are skipped
    unread.  Filtered scans trust counts as they trust ``min``/``max`` (False).

    A file of several super types needs ``rowmap`` (without one every stream is read
    whole): each super type's streams are selected by the indices within that type of
    the selected rows.  A row map of a prefix of the super column cuts the super
    stream to the segments it read (the read then ends there: :func:`scan_rows`)."""
    multi = len(meta.super_types) > 1
    if multi and rowmap is None:
        selectable: dict[int, tuple[Any, int]] = {}
    else:
        selectable = selectable_segmaps(meta, rowmap.type_rows if multi and rowmap else None)
    per_type = rowmap.local(ranges) if multi and rowmap is not None else None
    segs: list[Any] = []
    keep: dict[int, frozenset[int]] = {}
    for sid, refs in enumerate(plan.streams):
        got, k = select_segments([(ref.role, ref.segmap) for ref in refs], selectable,
                                 per_type[sid] if per_type is not None else ranges,
                                 prefix=verify_counts)
        segs.extend(got)
        keep.update(k)
    super_stream = plan.super_stream
    if multi and rowmap is not None:
        super_stream = None  # decoded once, while planning: the row map is its IDs
    elif super_stream is not None:
        segs.extend(super_stream.segmap)
    rp = plan_ranges(segs, selective_profile(plan.profile), plan.available)
    kept = {id(segmap): tuple(segmap[i] for i in sorted(idx)) for segmap, idx in
            ((selectable[k][0], v) for k, v in keep.items())}
    streams_cut = tuple(tuple(dataclasses.replace(ref, segmap=kept.get(id(ref.segmap),
                                                                       ref.segmap))
                              for ref in refs if kept.get(id(ref.segmap), ref.segmap))
                        for refs in plan.streams)
    cut = dataclasses.replace(plan, streams=streams_cut, segments=rp.segments, requests=rp.requests,
                              bytes_needed=rp.bytes_needed, bytes_to_read=rp.bytes_to_read,
                              request_count=rp.request_count, request_cap=rp.request_cap,
                              super_stream=super_stream)
    return cut, keep


def super_prefix(segmap: Any, rows: int) -> tuple[Any, ...]:
    """The first segments of the super column holding rows ``[0, rows)`` (by their
    ``count``; all of them when a count is missing)."""
    out = []
    seen = 0
    for seg in segmap:
        if seen >= rows and out:
            break
        if seg.count is None:
            return tuple(segmap)
        out.append(seg)
        seen += seg.count
    return tuple(out)


def selective_profile(profile: Profile) -> Profile:
    bound = profile.max_amplification
    if bound is not None and bound <= SELECTION_GAP_BYTES:
        return profile
    return with_amplification(profile, SELECTION_GAP_BYTES)


@dataclasses.dataclass(frozen=True)
class Wave:
    """One read of a scan, planned whole before it runs: ``scan/`` reads it as it is.

    ``ranges`` None reads ``plan`` as it is (every row); else the rows of ``ranges``,
    ``plan`` cut to the segments holding them and ``keep`` the segments kept per
    direct value stream (by ``id`` of its segmap; the cursor tree skips the others by
    their ``count``).  A piece of a limited filtered scan also says where the next one
    starts (``at`` in the surviving runs, ``cap`` unproven rows) and whether it is the
    last one there is."""

    paths: tuple[str, ...]
    plan: ScanPlan
    ranges: RowRanges | None = None
    keep: dict[int, frozenset[int]] = dataclasses.field(default_factory=dict, repr=False)
    rowmap: RowMap | None = dataclasses.field(default=None, repr=False)
    at: tuple[int, int] = (0, 0)
    cap: int = 0
    last: bool = True


@dataclasses.dataclass(frozen=True)
class Pieces:
    """A filtered scan with ``limit``: the surviving rows in file order as runs
    (:func:`surviving_runs`), read piece by piece with ``plan`` (the filter's columns,
    or every column read in one wave) until ``limit`` rows matched (:func:`plan_piece`)."""

    paths: tuple[str, ...]
    plan: ScanPlan
    runs: tuple[tuple[int, int, bool], ...]
    limit: int


@dataclasses.dataclass(frozen=True)
class FilterWork:
    """What running a filtered scan needs beyond the :class:`FilterPlan` it explains,
    planned before any I/O: ``scan/`` runs ``first`` and evaluates ``expr`` on it, asks
    :func:`plan_piece` for each next piece a limit needs, then :func:`plan_next` once for
    the second wave (``rest``)."""

    expr: Expr
    wanted: tuple[str, ...]
    filter_paths: tuple[str, ...]  # filter columns read (some super type has them)
    surviving: RowRanges | None  # None: every row (nothing known to cut by)
    rowmap: RowMap | None  # several super types: rows to (type, index)
    # the first wave, every case (nothing surviving, no column, one of two, a limit's
    # first piece): the waves after it depend on its matches (:func:`plan_piece`)
    first: Wave
    # the filter's and projected columns, every row: what batches cut piece by piece
    full: ScanPlan
    # two waves: the projected columns the filter does not read, planned whole here;
    # the second wave (:func:`plan_next`) cuts it to the rows the first matched
    rest: Wave | None = None
    pieces: Pieces | None = None  # ``limit``: the first wave, piece by piece
    # the filter's columns read, as (spelling, path): what evaluation looks up
    judged: tuple[tuple[str, tuple[str, ...]], ...] = ()
    # ``expr`` is bound by the types the decoded arrays will have (:func:`_type_names`,
    # before any read): evaluation takes it as it is, once it has checked that the
    # arrays are typed so (``names``: path to primitive type name, nulls left out)
    names: tuple[tuple[tuple[str, ...], str], ...] = ()

    @property
    def first_columns(self) -> tuple[str, ...]:
        """The output columns the first wave (or each piece) reads; the rest are the
        second wave's."""
        rest = set(self.rest.paths) if self.rest is not None else set()
        return tuple(c for c in self.wanted if c not in rest)


def _type_names(meta: FileMeta, paths: Sequence[tuple[str, ...]]) -> dict[tuple[str, ...], str]:
    """Primitive type names of filter paths, for binding before any read: the names the
    decoded arrays will have.  A path is decoded as the one type the super types that
    have it agree on (null parts aside: their rows are null), as a union (no name) when
    they disagree (``arrays.combine``); evaluation checks the arrays against these."""
    out: dict[tuple[str, ...], str] = {}
    for p in paths:
        found = {t for st in meta.super_types if (t := path_type(st, p)) is not None}
        kinds = (found - {NULL}) or found
        if len(kinds) == 1:
            (t,) = kinds
            if isinstance(t, PrimitiveType):
                out[p] = t.name
    return out


def _zones_one(meta: FileMeta, expr: Expr, fpaths: Sequence[tuple[str, ...]]
               ) -> tuple[tuple[Zone, ...], list[tuple[str, ...]]]:
    """The zones of a file of one super type (or a super type's view), and the filter
    columns whose statistics cut them."""
    n = meta.row_count
    if n is None:
        return (), []
    names = _type_names(meta, fpaths)
    try:
        bound = bind(expr, names)
    except FilterError:  # a super type's column the literal cannot compare with: the
        # rows are judged on the values, as the union the file's column is
        return (Zone(0, n, Truth.MAYBE),), []
    columns: dict[tuple[str, ...], tuple[list[int], list[Any]]] = {}
    fuzzy: dict[tuple[str, ...], tuple[list[int], list[Any], int]] = {}
    for p in fpaths:
        leaf = leaf_stream(meta, p)
        if leaf is None or p not in names:
            continue
        segmap, slack = leaf
        stats = [segment_stats(s) for s in segmap]
        counts = [s.count or 0 for s in segmap]
        per = [column_stats(st.count, st.nulls, st.min, st.max, st.nan, names[p])
               for st in stats]
        if slack:
            fuzzy[p] = (counts, per, slack)
        else:
            columns[p] = (counts, per)
    zones = (plan_zones(bound, n, columns, fuzzy) if columns or fuzzy
             else (Zone(0, n, Truth.MAYBE),))
    return zones, [*columns, *fuzzy]


def _global_zones(rowmap: RowMap, per_type: Sequence[tuple[Zone, ...]]
                  ) -> tuple[tuple[Zone, ...], RowRanges, RowRanges]:
    """The zones of the super types, each judged by its own rows, as zones of the file:
    runs of rows of the same truth in file order; and the rows not proven false and
    those proven true (from the same array: the zones can be thousands)."""
    n = len(rowmap.ids)
    truth = np.full(n, 1, np.int8)
    for sid, zones in enumerate(per_type):
        pos = rowmap.positions(sid)
        for z in zones:
            truth[pos[z.start:z.stop]] = _TRUTHS.index(z.truth)
    if not n:
        return (), RowRanges(), RowRanges()
    cuts = np.flatnonzero(np.diff(truth)) + 1
    starts = np.concatenate([[0], cuts]).tolist()
    stops = [*starts[1:], n]
    kinds = truth[starts].tolist()
    zones_out = tuple(Zone(a, b, _TRUTHS[k]) for a, b, k in zip(starts, stops, kinds,
                                                                strict=True))
    return zones_out, _mask_runs(truth != 0), _mask_runs(truth == 2)


def _mask_runs(mask: np.ndarray) -> RowRanges:
    """The runs of True rows of ``mask`` as row ranges."""
    edges = np.diff(np.concatenate([[0], mask.view(np.int8), [0]]))
    starts = np.flatnonzero(edges == 1)
    stops = np.flatnonzero(edges == -1)
    return RowRanges(tuple(starts.tolist()), tuple(stops.tolist()))


def _rest_saving(meta: FileMeta, rest_plan: ScanPlan, surviving: RowRanges,
                 proven: RowRanges, rowmap: RowMap | None) -> int:
    """Bytes of the other columns a second wave saves by reading only the rows the
    filter matched (each super type's by its own rows, with ``rowmap``)."""
    if len(meta.super_types) <= 1:
        streams = [(ref.role, ref.segmap) for refs in rest_plan.streams for ref in refs]
        return late_saving(streams, selectable_segmaps(meta), surviving, proven)
    if rowmap is None:
        return 0
    saving = 0
    selectable = selectable_segmaps(meta, rowmap.type_rows)
    for sid, (surv, prov) in enumerate(zip(rowmap.local(surviving),
                                           rowmap.local(proven), strict=True)):
        streams = [(ref.role, ref.segmap) for ref in rest_plan.streams[sid]]
        saving += late_saving(streams, selectable, surv, prov)
    return saving


def _judge(meta: FileMeta, expr: Expr, fpaths: Sequence[tuple[str, ...]],
           rowmap: RowMap | None) -> tuple[tuple[Zone, ...], RowRanges, RowRanges,
                                           list[tuple[str, ...]], list[tuple[Zone, ...]]]:
    """The filter judged on the statistics: the zones of the file, (several super types)
    its rows not proven false and proven true, the columns that cut them, and each super
    type's zones."""
    zones: tuple[Zone, ...] = ()
    kept_rows = proven_rows = RowRanges()
    pruned: list[tuple[str, ...]] = []
    type_zones: list[tuple[Zone, ...]] = []
    if len(meta.super_types) <= 1:
        zones, pruned = _zones_one(meta, expr, fpaths)
    elif rowmap is not None:
        for sid, n in enumerate(rowmap.type_rows):
            z, by = _zones_one(type_view(meta, sid, n), expr, fpaths)
            type_zones.append(z)
            pruned.extend(p for p in by if p not in pruned)
        zones, kept_rows, proven_rows = _global_zones(rowmap, type_zones)
    return zones, kept_rows, proven_rows, pruned, type_zones


def plan_filter(meta: FileMeta, filter: Any, wanted: Sequence[str], profile: Profile,
                available: tuple[int, int] | None, base: RowRanges | None = None,
                rowmap: RowMap | None = None, planned: ScanPlan | None = None,
                limit: int | None = None) -> tuple[FilterPlan, FilterWork]:
    """Zones, pruning and the one-or-two-waves decision for a filtered scan (no I/O),
    and its waves: the first one whole, the second one's columns, a ``limit``'s runs.

    A file of several super types is judged per super type with ``rowmap`` (the whole
    super column decoded): each type's zones by its own statistics, mapped to the rows
    of the file; without one nothing is pruned.  ``planned``: the plan of ``wanted``,
    made already (each projection is planned once).  ``filter``: an expression, in the
    one form ``planner.dnf.as_expr`` gives it where a read verb is entered."""
    expr = filter
    fpaths = list(dict.fromkeys(columns_of(expr)))
    names = _type_names(meta, fpaths)
    bound = bind(expr, names)
    spell = [format_path(p) for p in fpaths]
    plans: dict[tuple[str, ...], ScanPlan] = {}
    if planned is not None:
        plans[tuple(wanted)] = planned

    def plan_of(paths: Sequence[str]) -> ScanPlan:
        """Each projection planned once (the filter's, the whole scan's, the rest's)."""
        key = tuple(paths)
        got = plans.get(key)
        if got is None:
            got = plans[key] = planning.plan_scan(meta, list(paths), profile, available=available)
        return got

    first_all = list(dict.fromkeys([*wanted, *spell]))
    absent = set(plan_of(first_all).missing_paths) & set(spell)
    read_f = tuple(p for p in spell if p not in absent)
    multi = len(meta.super_types) > 1
    if multi and rowmap is not None and not rowmap.complete:
        rowmap = None
    zones, kept_rows, proven_rows, pruned, type_zones = _judge(meta, expr, fpaths, rowmap)
    surviving: RowRanges | None = None
    if zones:
        surviving = kept_rows if multi else RowRanges.of(
            (z.start, z.stop) for z in zones if z.truth is not Truth.FALSE)
        if base is not None:
            surviving = intersect_ranges(surviving, base)
    elif base is not None:
        surviving = base
    others = [p for p in wanted if p not in read_f]
    everything = list(dict.fromkeys([*wanted, *read_f]))
    full = plan_of(everything)
    kept: dict[int, dict[int, frozenset[int]] | None] = {}
    # one super type, every row surviving (the statistics rule nothing out, as in most
    # small files of a dataset): the plans are read as they are, not cut to every row
    every_row = (not multi and surviving is not None and len(surviving) == 1
                 and surviving.starts[0] == 0 and surviving.stops[0] == meta.row_count)

    def cut(paths: list[str]) -> tuple[ScanPlan | None, int]:
        if not paths:
            return None, 0
        plan = plan_of(paths)
        if surviving is None or every_row:
            return plan, plan.bytes_needed
        c, k = plan_rows(meta, plan, surviving, verify_counts=False, rowmap=rowmap)
        kept[id(c)] = k
        return c, c.bytes_needed

    one, _ = cut(everything)
    wave1, bytes_wave1 = cut(list(read_f))
    _, bytes_rest = cut(others)
    saving = 0
    if others and read_f and surviving is not None:
        proven = proven_rows if multi else RowRanges.of(
            (z.start, z.stop) for z in zones if z.truth is Truth.TRUE)
        saving = _rest_saving(meta, plan_of(others), surviving, proven, rowmap)
    two = saving > 0 and prefer_two_waves(saving, profile)
    fplan = FilterPlan(
        filter=repr(expr), profile=profile, zones=zones, filter_columns=tuple(spell),
        pruned_columns=tuple(format_path(p) for p in pruned),
        segments_total=len(full.segments),
        segments_pruned=len(full.segments) - (len(one.segments) if one else 0),
        bytes_all=full.bytes_needed, bytes_wave1=bytes_wave1, bytes_rest=bytes_rest,
        two_waves=two, late_saving=saving, wave1=wave1 if two else one,
        type_zones=tuple(type_zones))
    run = wave1 if two else one
    first_paths = tuple(read_f) if two else tuple(everything)
    if run is None or (surviving is not None and not surviving.rows):
        first = _structure_wave(meta, tuple(wanted), first_paths, surviving, rowmap, profile,
                                available)
    elif surviving is None or every_row:
        first = Wave(first_paths, run)
    else:
        first = Wave(first_paths, run, surviving, kept.get(id(run)) or {}, rowmap)
    pieces = None
    if limit is not None and surviving is not None and surviving.rows:  # the first piece
        pieces = Pieces(first_paths, plan_of(first_paths) if two else full,
                        tuple(surviving_runs(surviving, zones)) if limit else (), limit)
        first = _piece(meta, pieces, (0, 0), limit, max(limit, LIMIT_PIECE_ROWS), rowmap)
    rest = Wave(tuple(others), plan_of(others)) if two and others else None
    return fplan, FilterWork(bound, tuple(wanted), read_f, surviving, rowmap, first, full,
                              rest, pieces,
                              tuple((c, p) for c, p in zip(spell, fpaths, strict=True)
                                    if c in read_f),
                              tuple((p, n) for p, n in names.items() if n != "null"))


def _structure_wave(meta: FileMeta, wanted: tuple[str, ...], paths: tuple[str, ...],
                    surviving: RowRanges | None, rowmap: RowMap | None, profile: Profile,
                    available: tuple[int, int] | None) -> Wave:
    """A first wave that judges no column: nothing survives (the projection's structure
    read for no row), or no column to read (the rows' structure)."""
    if surviving is not None and not surviving.rows:
        plan = planning.plan_scan(meta, list(wanted), profile, available=available)
        return _rows_wave(meta, wanted, plan, RowRanges(), rowmap)
    plan = planning.plan_scan(meta, list(paths), profile, available=available)
    if surviving is None:
        return Wave(paths, plan)
    return _rows_wave(meta, paths, plan, surviving, rowmap)


def _rows_wave(meta: FileMeta, paths: tuple[str, ...], plan: ScanPlan, ranges: RowRanges,
               rowmap: RowMap | None) -> Wave:
    """The rows of ``ranges`` of ``plan`` as a wave (counts trusted, as statistics are)."""
    cut, keep = plan_rows(meta, plan, ranges, verify_counts=False, rowmap=rowmap)
    return Wave(paths, cut, ranges, keep, rowmap)


def intersect_ranges(a: RowRanges, b: RowRanges) -> RowRanges:
    out = []
    i = j = 0
    ap, bp = a.pairs, b.pairs
    while i < len(ap) and j < len(bp):
        lo, hi = max(ap[i][0], bp[j][0]), min(ap[i][1], bp[j][1])
        if lo < hi:
            out.append((lo, hi))
        if ap[i][1] < bp[j][1]:
            i += 1
        else:
            j += 1
    return RowRanges.of(out)


def runs_of(rows: np.ndarray) -> RowRanges:
    """Sorted distinct row numbers as ranges (vectorised ``ranges_from_indices``)."""
    rows = np.asarray(rows, np.int64)
    if not rows.size:
        return RowRanges()
    if rows.size > 1 and not bool((np.diff(rows) > 0).all()):
        return ranges_from_indices(rows.tolist())  # refuses it, saying why
    cuts = np.flatnonzero(np.diff(rows) != 1) + 1
    starts = rows[np.concatenate([[0], cuts])]
    stops = rows[np.concatenate([cuts - 1, [rows.size - 1]])] + 1
    return RowRanges.from_arrays(starts, stops)


def rows_of(ranges: RowRanges, positions: np.ndarray) -> np.ndarray:
    """Absolute row numbers of ``positions`` within the rows of ``ranges`` (in order)."""
    if len(ranges) == 1:
        return positions + ranges.starts[0]
    starts = np.asarray(ranges.starts, np.int64)
    lens = np.asarray(ranges.stops, np.int64) - starts
    ends = np.cumsum(lens)
    k = np.searchsorted(ends, positions, "right")
    return starts[k] + positions - (ends[k] - lens[k])


def surviving_runs(surviving: RowRanges, zones: Sequence[Zone]
                   ) -> list[tuple[int, int, bool]]:
    """The surviving rows in file order as ``(start, stop, proven)`` runs: ``proven``
    where the statistics prove the filter true (no zones: nothing proven)."""
    true = RowRanges.of((z.start, z.stop) for z in zones if z.truth is Truth.TRUE)
    edges = sorted({*true.starts, *true.stops})
    out: list[tuple[int, int, bool]] = []
    for a, b in surviving.pairs:
        inner = edges[bisect.bisect_right(edges, a):bisect.bisect_left(edges, b)]
        for lo, hi in itertools.pairwise([a, *inner, b]):
            k = bisect.bisect_right(true.starts, lo) - 1
            sure = k >= 0 and true.stops[k] > lo
            if out and out[-1][1] == lo and out[-1][2] == sure:
                out[-1] = (out[-1][0], hi, sure)
            else:
                out.append((lo, hi, sure))
    return out


def next_piece(runs: Sequence[tuple[int, int, bool]], at: tuple[int, int], need: int,
               cap: int) -> tuple[RowRanges, tuple[int, int]]:
    """The next piece of a filtered scan with ``limit``: from position ``at`` (run index,
    row) in ``runs`` (:func:`surviving_runs`), rows in file order until the proven rows
    reach ``need`` or the unproven ones ``cap``; and the position after it."""
    i, row = at
    pairs: list[tuple[int, int]] = []
    proven = unproven = 0
    while i < len(runs) and proven < need and unproven < cap:
        a, b, sure = runs[i]
        a = max(a, row)
        take = min(b - a, need - proven if sure else cap - unproven)
        pairs.append((a, a + take))
        if sure:
            proven += take
        else:
            unproven += take
        if a + take < b:
            row = a + take
            break
        i, row = i + 1, 0
    return RowRanges.of(pairs), (i, row)


def pieces_of(rows: RowRanges, n: int) -> list[RowRanges]:
    """``rows`` in file order, cut into pieces of ``n`` rows (the last fewer)."""
    out: list[RowRanges] = []
    cur: list[tuple[int, int]] = []
    have = 0
    for a, b in rows.pairs:
        while a < b:
            k = min(b - a, n - have)
            cur.append((a, a + k))
            have += k
            a += k
            if have == n:
                out.append(RowRanges.of(cur))
                cur, have = [], 0
    if cur:
        out.append(RowRanges.of(cur))
    return out



#: A filtered scan with ``limit`` reads its surviving rows in pieces of at most this
#: many rows of zones the statistics cannot judge (a piece costs a round trip; fewer
#: rows would still read whole segments),
LIMIT_PIECE_ROWS = 4096
#: each piece this many times the one before (a filter matching few of the rows it
#: cannot rule out pays a few round trips, never one per piece of a long file).
LIMIT_GROWTH = 4


def plan_next(meta: FileMeta, work: FilterWork,
              matched: Sequence[tuple[RowRanges | None, np.ndarray]]) -> Wave:
    """The second wave: ``work.rest`` (the other columns, planned whole before the scan)
    cut to the rows the first wave matched: ``matched`` holds, per wave or piece read,
    its rows (None: every row) and the positions within them the filter kept."""
    if work.rest is None:
        raise FilterError("this filtered scan reads every column in one wave: it has no "
                          "second wave to plan")
    parts = [kept if rows is None else (rows_of(rows, kept) if rows.rows else kept)
             for rows, kept in matched]
    found = (parts[0] if len(parts) == 1 else
             np.concatenate(parts) if parts else np.zeros(0, np.int64))
    ranges = runs_of(found)
    cut, keep = plan_rows(meta, work.rest.plan, ranges, verify_counts=False,
                          rowmap=work.rowmap)
    return Wave(work.rest.paths, cut, ranges, keep, work.rowmap)


def plan_piece(meta: FileMeta, work: FilterWork, after: Wave, need: int | None
               ) -> Wave | None:
    """The wave after ``after`` a filtered scan judges, once it kept all but ``need`` of
    its limit (None: no limit): the next piece of a ``limit`` (:func:`next_piece`:
    from where ``after`` ended, the rows until ``need`` more are proven or the unproven
    ones reach a cap that grows piece by piece); None when there is none (no limit,
    enough rows matched, or every surviving row read)."""
    pieces = work.pieces
    if pieces is None or need is None or need <= 0 or after.last:
        return None
    return _piece(meta, pieces, after.at, need, after.cap * LIMIT_GROWTH, work.rowmap)


def _piece(meta: FileMeta, pieces: Pieces, at: tuple[int, int], need: int, cap: int,
           rowmap: RowMap | None) -> Wave:
    piece, nxt = next_piece(pieces.runs, at, need, cap)
    cut, keep = plan_rows(meta, pieces.plan, piece, verify_counts=False, rowmap=rowmap)
    return Wave(pieces.paths, cut, piece, keep, rowmap, nxt, cap, nxt[0] >= len(pieces.runs))


def batch_pieces(work: FilterWork, batch_rows: int) -> list[RowRanges]:
    """Filtered batches that skip what the statistics rule out: the surviving rows in
    file order, in pieces of ``batch_rows`` rows (each then :func:`plan_batch`)."""
    if work.surviving is None:
        raise FilterError("the statistics rule out no zone: the batches are read whole")
    return pieces_of(work.surviving, batch_rows)


def plan_batch(meta: FileMeta, work: FilterWork, piece: RowRanges) -> Wave:
    """A filtered batch's read: the filter's and projected columns of ``piece``."""
    paths = tuple(dict.fromkeys([*work.wanted, *work.filter_paths]))
    cut, keep = plan_rows(meta, work.full, piece, verify_counts=False, rowmap=work.rowmap)
    return Wave(paths, cut, piece, keep, work.rowmap)


@dataclasses.dataclass(frozen=True)
class RowMapRead:
    """The read of a row map: ``meta`` with the super column cut to the segments read
    (all of them when ``complete``), and their ranges."""

    meta: FileMeta
    ranges: Any  # a coalescing.RangePlan
    complete: bool


def plan_row_map(meta: FileMeta, profile: Profile, available: tuple[int, int] | None,
                 rows: int | None = None) -> RowMapRead:
    """The row map of a file of several super types: its super column read whole or
    (``rows``, when its segments have ``count``) only the segments holding rows
    ``[0, rows)``."""
    segmap = meta.super_column if rows is None else super_prefix(meta.super_column, rows)
    complete = len(segmap) == len(meta.super_column)
    part = meta if complete else dataclasses.replace(meta, super_column=segmap)
    return RowMapRead(part, plan_ranges(list(segmap), profile, available), complete)
