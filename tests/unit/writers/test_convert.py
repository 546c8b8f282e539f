"""``csup_async.convert`` and ``csup-async convert``: NDJSON into CSUP from Python, a CSUP
file copied as it is (``copy=True`` / ``--copy``: the upload of an existing file), and
memory that does not grow with the input."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

import csup_async
from csup_async.cli import main
from csup_async.writers.inputs import read_json
from tests.support.paths import ROOT

ROWS = [{"id": i, "code": 200 if i % 3 else "E42", "dur": i if i % 2 else i / 2,
         "u": {"name": f"n{i}"} if i % 5 else None, "tags": ["a"] * (i % 3)}
        for i in range(400)]


def _ndjson(tmp: Path, rows: list[Any] = ROWS) -> Path:
    p = tmp / "in.ndjson"
    p.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return p


def _rows(path: Path | str, **opts: Any) -> list[Any]:
    with csup_async.open_sync(str(path), **opts) as r:
        return r.read_rows()  # type: ignore[no-any-return]


def _as_read(rows: list[Any]) -> list[Any]:
    """What reading gives back: a fused record has every field (missing ones null)."""
    keys = list(dict.fromkeys(k for r in rows for k in r))
    return [{k: r.get(k) for k in keys} for r in rows]


def test_convert_ndjson_is_the_write_of_its_rows(tmp_path: Path) -> None:
    src = _ndjson(tmp_path)
    assert csup_async.convert(src, tmp_path / "a.csup") == len(ROWS)
    csup_async.write(tmp_path / "b.csup", read_json(str(src)))
    assert (tmp_path / "a.csup").read_bytes() == (tmp_path / "b.csup").read_bytes()
    assert _rows(tmp_path / "a.csup") == _as_read(ROWS)
    assert csup_async.convert(str(src), tmp_path / "c.csup", fuse=False) == len(ROWS)
    assert _rows(tmp_path / "c.csup") == ROWS  # exact types: no field added


def test_convert_of_a_csup_file_with_nothing_to_change_copies_it(tmp_path: Path) -> None:
    src = tmp_path / "in.csup"
    csup_async.write(src, ROWS, segment_thresh=512, target="csup-async")
    assert csup_async.convert(src, tmp_path / "same.csup", target="csup-async") == len(ROWS)
    assert (tmp_path / "same.csup").read_bytes() == src.read_bytes()
    # the default target is super: our own layout is written again as CSUP v23, and a
    # v23 file (already in the default's layout) is copied
    assert csup_async.convert(src, tmp_path / "v23.csup") == len(ROWS)
    v23 = (tmp_path / "v23.csup").read_bytes()
    assert v23[:8] == b"CSUP" + (23).to_bytes(4, "little")
    assert _rows(tmp_path / "v23.csup") == _rows(src)
    assert csup_async.convert(tmp_path / "v23.csup", tmp_path / "again.csup") == len(ROWS)
    assert (tmp_path / "again.csup").read_bytes() == v23
    # a writer option asks for a new layout: the values are written again
    assert csup_async.convert(src, tmp_path / "new.csup", segment_thresh=1 << 20,
                              target="csup-async") == len(ROWS)
    assert (tmp_path / "new.csup").read_bytes() != src.read_bytes()
    assert _rows(tmp_path / "new.csup") == _rows(src)


def test_copy_uploads_the_file_as_it_is(tmp_path: Path, moto_s3: Any) -> None:
    src = tmp_path / "in.csup"
    csup_async.write(src, ROWS)
    url = f"s3://{moto_s3.BUCKET}/copy-{tmp_path.name}/in.csup"
    opts = moto_s3.store_options()
    assert csup_async.convert(src, url, copy=True, **opts) == len(ROWS)
    assert _rows(url, **opts) == _rows(src)
    with pytest.raises(csup_async.ObjectExistsError):
        csup_async.convert(src, url, copy=True, if_absent=True, **opts)


def test_copy_refuses_what_it_cannot_write_as_it_is(tmp_path: Path) -> None:
    src = _ndjson(tmp_path)
    with pytest.raises(csup_async.ArgumentError, match="CSUP or BSUP"):
        csup_async.convert(src, tmp_path / "x.csup", copy=True)
    good = tmp_path / "in.csup"
    csup_async.write(good, ROWS)
    with pytest.raises(csup_async.ArgumentError, match="segment_thresh"):
        csup_async.convert(good, tmp_path / "x.csup", copy=True, segment_thresh=10)
    bad = tmp_path / "bad.csup"
    bad.write_bytes(good.read_bytes()[:-7])  # the trailer cut
    with pytest.raises(csup_async.FormatError):
        csup_async.convert(bad, tmp_path / "x.csup", copy=True)
    assert not (tmp_path / "x.csup").exists()
    assert [p.name for p in tmp_path.iterdir() if ".tmp-" in p.name] == []


def test_cli_copy(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "in.csup"
    csup_async.write(src, ROWS)
    assert main(["convert", "--copy", str(src), str(tmp_path / "out.csup")]) == 0
    assert (tmp_path / "out.csup").read_bytes() == src.read_bytes()
    assert "wrote 400 values" in capsys.readouterr().err
    assert main(["convert", "--copy", str(src), str(tmp_path / "out.parquet")]) != 0
    assert "--copy" in capsys.readouterr().err


def test_cli_ndjson_to_csup_is_the_python_convert(tmp_path: Path) -> None:
    src = _ndjson(tmp_path)
    assert main(["convert", str(src), str(tmp_path / "cli.csup")]) == 0
    csup_async.convert(src, tmp_path / "api.csup")
    assert (tmp_path / "cli.csup").read_bytes() == (tmp_path / "api.csup").read_bytes()


_PEAK = """
import json, sys, tracemalloc
sys.path.insert(0, {root!r})
import csup_async
src, dest = sys.argv[1], sys.argv[2]
tracemalloc.start()
csup_async.convert(src, dest, skew_thresh=1 << 20)
print(tracemalloc.get_traced_memory()[1])
"""


def _peak(src: Path, dest: Path) -> int:
    out = subprocess.run([sys.executable, "-c", _PEAK.format(root=str(ROOT)), str(src),
                          str(dest)], capture_output=True, text=True, check=True,
                         env=dict(os.environ, PYTHONPATH=str(ROOT)))
    return int(out.stdout.strip())


def test_converting_ndjson_streams_in_bounded_memory(tmp_path: Path) -> None:
    """Peak memory (every allocation Python and numpy make) converting 4x the rows stays
    near that of 1x: the file is read and written a bounded window at a time."""
    import random

    rnd = random.Random(5)

    def rows(n: int) -> list[Any]:
        return [{"ts": f"2026-01-01T00:00:{i % 60:02d}Z", "msg": "x" * rnd.randrange(80),
                 "code": rnd.choice([200, 404, "E1"]), "n": rnd.random(),
                 "u": {"id": i, "name": f"user{i % 977}"}, "tags": ["a", "b"][: i % 3]}
                for i in range(n)]

    small, large = tmp_path / "s", tmp_path / "l"
    small.mkdir()
    large.mkdir()
    s = _ndjson(small, rows(20_000))
    big = _ndjson(large, rows(80_000))
    assert big.stat().st_size > 3.5 * s.stat().st_size
    p_small, p_large = _peak(s, tmp_path / "s.csup"), _peak(big, tmp_path / "l.csup")
    assert p_large < 1.5 * p_small, (p_small, p_large)
