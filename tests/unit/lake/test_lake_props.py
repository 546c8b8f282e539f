"""Properties of the lake's planning: pruning never drops a match, ranges cover exactly the
kept chunks, the loader's seek index tiles its object, key order is Zed's."""

from __future__ import annotations

import itertools
from typing import Any

from hypothesis import given, settings
from hypothesis import strategies as st

import planner as P
from csup_async.format import bsup
from csup_async.lake.keys import KeyRange, compare, sort_key
from csup_async.lake.load import encode_object
from csup_async.lake.seek import SeekEntry, ranges_for
from csup_async.model.types import INT64, STRING
from csup_async.model.values import Value

keys = st.integers(min_value=0, max_value=10**6)
bound = st.one_of(st.none(), keys)


def kr(lo: int | None, hi: int | None, loi: bool, hii: bool) -> KeyRange:
    return KeyRange(None if lo is None else Value(INT64, lo),
                    None if hi is None else Value(INT64, hi), loi, hii)


def inside(k: int, lo: int | None, hi: int | None, loi: bool, hii: bool) -> bool:
    return ((lo is None or k > lo or (loi and k == lo))
            and (hi is None or k < hi or (hii and k == hi)))


@given(st.lists(keys, min_size=1, max_size=30), bound, bound, st.booleans(), st.booleans())
def test_pruning_keeps_every_span_holding_a_match(ks: list[int], lo: Any, hi: Any, loi: bool,
                                                  hii: bool) -> None:
    r = kr(lo, hi, loi, hii)
    mn, mx = min(ks), max(ks)
    # does the real interval [mn, mx] meet the range?  (keys need not be integers)
    low, low_in = (mn, True) if lo is None or lo < mn else (lo, loi and lo <= mx)
    if lo is not None and lo == mn:
        low_in = loi
    high, high_in = (mx, True) if hi is None or hi > mx else (hi, hii and hi >= mn)
    if hi is not None and hi == mx:
        high_in = hii
    meets = low < high or (low == high and low_in and high_in)
    pruned = r.prunes(Value(INT64, mn), Value(INT64, mx))
    assert not (pruned and meets)  # sound: never drops a span that can match
    if lo is None or hi is None:  # one comparison: Zed's rule is exact
        assert pruned == (not meets)
    if pruned:  # sound: no key of the span is in the range
        assert not any(inside(k, lo, hi, loi, hii) for k in (mn, mx, *ks))
    for k in ks:
        assert r.contains(Value(INT64, k)) == inside(k, lo, hi, loi, hii)


@given(st.lists(st.tuples(keys, st.integers(1, 50), st.integers(1, 500)), min_size=1,
                max_size=20), bound, bound, st.sampled_from(sorted(P.PROFILES)))
def test_ranges_cover_exactly_the_kept_chunks(chunks: list[Any], lo: Any, hi: Any,
                                              profile: str) -> None:
    entries, off, start = [], 0, 0
    for base, width, length in chunks:
        start = max(start, base)
        entries.append(SeekEntry(Value(INT64, start), Value(INT64, start + width), 0, 1,
                                 off, length))
        off += length
        start += width
    r = kr(lo, hi, True, True)
    kept = [(e.offset, e.length) for e in entries if not r.prunes(e.min, e.max)]
    runs = ranges_for(entries, r)
    covered = {b for a, n in runs for b in range(a, a + n)}
    assert covered == {b for a, n in kept for b in range(a, a + n)}
    # the planner's coalescing (what a scan sends) fetches every byte of every run
    requests = [(q.offset, q.length) for q in P.coalesce(runs, profile)]
    assert all(b >= a + n for (a, n), (b, _) in itertools.pairwise(requests))
    assert covered <= {b for a, n in requests for b in range(a, a + n)}


@settings(max_examples=40, deadline=None)
@given(st.lists(st.one_of(st.none(), keys), min_size=1, max_size=200),
       st.sampled_from(["asc", "desc"]), st.integers(1, 64))
def test_loaded_object_is_sorted_and_its_seek_index_tiles_it(ks: list[Any], order: str,
                                                              stride: int) -> None:
    from csup_async.lake.load import sorted_rows
    from csup_async.lake.zedtypes import rec

    t = rec(("k", INT64), ("s", STRING))
    rows = [(t, {"k": k, "s": f"r{i}"}) for i, k in enumerate(ks)]

    class Cfg:
        key = ("k",)

    Cfg.order = order  # type: ignore[attr-defined]
    srows = sorted_rows(Cfg, rows)  # type: ignore[arg-type]
    got = [r[3] for r in srows]
    want = sorted(got, key=sort_key, reverse=order == "desc")
    assert [compare(a, b) for a, b in zip(got, want, strict=True)] == [0] * len(got)
    data, seek, mn, mx = encode_object(srows, order, stride)
    entries = [bsup.decode_value(tt, b) for tt, b in bsup.iter_raw_values(seek)]
    pos = n = 0
    for e in entries:
        assert (e["offset"], e["val_off"]) == (pos, n)
        chunk = [bsup.decode_value(tt, b)["k"] for tt, b in
                 bsup.iter_raw_values(data[e["offset"]:e["offset"] + e["length"]])]
        assert len(chunk) == e["val_cnt"]
        pos, n = pos + e["length"], n + e["val_cnt"]
    assert (pos, n) == (len(data), len(ks))
    assert compare(mn, mx) <= 0
