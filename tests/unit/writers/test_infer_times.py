"""``infer_times=True`` / ``convert --infer-times`` read an RFC 3339 string as the exact
instant Python's datetime gives it: the offset is applied before the range is checked
(an instant outside int64 nanoseconds is an EncodeError, never a time wrapped to the
other end of the range), and an offset beyond ±23:59 is not a timestamp (the strings
stay strings, as a month 13 does).  Issue #39 item 4."""

from __future__ import annotations

import datetime as dt
from pathlib import Path
from typing import Any

import numpy as np
import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

import csup_async
from csup_async import EncodeError
from csup_async.cli import EXIT_DATA, main

NS_MIN, NS_MAX = -(1 << 63) + 1, (1 << 63) - 1  # int64's minimum is numpy's NaT
EPOCH = dt.datetime(1970, 1, 1, tzinfo=dt.UTC)
SETTINGS = settings(max_examples=200, deadline=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture])


def _written(tmp_path: Path, strings: list[str]) -> list[Any]:
    p = tmp_path / "t.csup"
    csup_async.write(p, [{"t": s} for s in strings], infer_times=True)
    return [r["t"] for r in csup_async.read(p).to_pylist()]


@pytest.mark.parametrize("text", ["2262-04-11T23:00:00-01:00", "1677-09-21T00:20:00+01:00",
                                  "2262-04-11T23:47:16.854775808Z",
                                  "1677-09-21T00:12:43.145224192Z",
                                  "3000-01-02T03:04:05Z", "0001-01-01T00:00:00+23:59"])
def test_an_instant_out_of_range_is_an_error(tmp_path: Path, text: str) -> None:
    with pytest.raises(EncodeError, match="outside the range of a time"):
        _written(tmp_path, ["2024-01-02T03:04:05Z", text])
    assert not (tmp_path / "t.csup").exists()


@pytest.mark.parametrize(("text", "utc"), [
    ("2262-04-11T23:00:00+01:00", "2262-04-11T22:00:00"),
    ("1677-09-21T00:20:00-01:00", "1677-09-21T01:20:00"),
    ("2262-04-11T23:47:16.854775807Z", "2262-04-11T23:47:16.854775807"),
    ("1677-09-21T00:12:43.145224193Z", "1677-09-21T00:12:43.145224193"),
    ("2262-04-12T00:47:16.854775807+01:00", "2262-04-11T23:47:16.854775807"),
    ("2024-01-02t03:04:05.5-05:30", "2024-01-02T08:34:05.5"),
])
def test_an_instant_in_range_is_exact_after_its_offset(tmp_path: Path, text: str,
                                                       utc: str) -> None:
    assert _written(tmp_path, [text]) == [np.datetime64(utc, "ns")]


@pytest.mark.parametrize("offset", ["+24:00", "-24:00", "+99:99", "+00:60", "-23:60"])
def test_an_offset_beyond_2359_is_not_a_timestamp(tmp_path: Path, offset: str) -> None:
    strings = ["2024-01-02T03:04:05Z", f"2024-01-02T03:04:05{offset}"]
    assert _written(tmp_path, strings) == strings


def test_convert_infer_times_out_of_range_is_a_data_error(
        tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.ndjson"
    src.write_text('{"t": "2262-04-11T23:00:00-01:00"}\n')
    assert main(["convert", str(src), str(tmp_path / "o.csup"), "--infer-times"]) == EXIT_DATA
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "'2262-04-11T23:00:00-01:00' is outside the range" in err
    src.write_text('{"t": "2024-01-02T03:04:05+99:99"}\n')
    assert main(["convert", str(src), str(tmp_path / "o.csup"), "--infer-times"]) == 0
    assert csup_async.read(str(tmp_path / "o.csup")).to_pylist() == [
        {"t": "2024-01-02T03:04:05+99:99"}]


# ------------------------------------------------------------ the property ---

def _text(local: dt.datetime, frac: str, minutes: int | None, sep: str) -> str:
    """``local`` (naive, second resolution) as RFC 3339 with ``frac`` and an offset of
    ``minutes`` (None: ``Z``)."""
    base = f"{local.year:04d}-{local:%m-%d}{sep}{local:%H:%M:%S}"
    if frac:
        base += "." + frac
    if minutes is None:
        return base + "Z"
    sign = "-" if minutes < 0 else "+"
    hh, mm = divmod(abs(minutes), 60)
    return f"{base}{sign}{hh:02d}:{mm:02d}"


def _expected(local: dt.datetime, frac: str, minutes: int | None) -> int:
    """The instant's exact nanoseconds, by Python's datetime."""
    tz = dt.timezone(dt.timedelta(minutes=minutes or 0))
    d = local.replace(tzinfo=tz) - EPOCH
    return (d.days * 86_400 + d.seconds) * 1_000_000_000 + int((frac or "0").ljust(9, "0"))


_OFFSETS = st.one_of(st.none(), st.integers(-(23 * 60 + 59), 23 * 60 + 59),
                     st.sampled_from([0, 60, -60, 23 * 60 + 59, -(23 * 60 + 59)]))
_FRACS = st.one_of(st.just(""), st.text("0123456789", min_size=1, max_size=9),
                   st.sampled_from(["854775807", "854775808", "145224192", "145224193"]))


@st.composite
def _instants(draw: st.DrawFn) -> tuple[dt.datetime, str, int | None]:
    """Any second of years 1..9999, or one within a day of either end of the range."""
    minutes = draw(_OFFSETS)
    if draw(st.booleans()):
        local = draw(st.datetimes(dt.datetime(1, 1, 2), dt.datetime(9999, 12, 30)))
    else:
        edge = dt.datetime(2262, 4, 11, 23, 47, 16) if draw(st.booleans()) else \
            dt.datetime(1677, 9, 21, 0, 12, 43)
        local = edge + dt.timedelta(seconds=draw(st.integers(-86_400, 86_400)))
    return local.replace(microsecond=0), draw(_FRACS), minutes


@SETTINGS
@given(_instants(), st.sampled_from("Tt "))
@example((dt.datetime(2262, 4, 11, 23), "", -60), "T")
@example((dt.datetime(1677, 9, 21, 0, 20), "", 60), "T")
def test_every_timestamp_reads_as_pythons_instant_or_is_an_error(
        tmp_path: Path, instant: tuple[dt.datetime, str, int | None], sep: str) -> None:
    local, frac, minutes = instant
    text = _text(local, frac, minutes, sep)
    want = _expected(local, frac, minutes)
    if NS_MIN <= want <= NS_MAX:
        got = _written(tmp_path, [text])
        assert got == [np.datetime64(want, "ns")], text
    else:
        with pytest.raises(EncodeError, match="outside the range"):
            _written(tmp_path, [text])


@SETTINGS
@given(_instants(), st.integers(24, 99), st.integers(0, 99), st.booleans())
def test_an_offset_out_of_rfc3339s_range_keeps_the_strings(
        tmp_path: Path, instant: tuple[dt.datetime, str, int | None], hh: int, mm: int,
        hour_bad: bool) -> None:
    local, frac, _ = instant
    hh, mm = (hh, mm % 60) if hour_bad else (hh % 24, 60 + mm % 40)
    text = _text(local, frac, None, "T")[:-1] + f"+{hh:02d}:{mm:02d}"
    assert _written(tmp_path, [text]) == [text]
