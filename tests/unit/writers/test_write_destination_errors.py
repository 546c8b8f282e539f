"""Writing into a directory that is not there (or cannot take the file) is a CsupError
naming the destination the user gave, never the temporary file beside it (issue #39
item 16); nothing is left behind."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

import csup_async
from csup_async import NotFoundError, StoreError
from csup_async.cli import EXIT_NOT_FOUND, main


def test_write_into_a_missing_directory_names_the_destination(tmp_path: Path) -> None:
    dest = tmp_path / "absent" / "x.csup"
    with pytest.raises(NotFoundError) as e:
        csup_async.write(dest, [{"a": 1}])
    assert e.value.path == str(dest)
    assert str(tmp_path / "absent") in str(e.value) and ".tmp-" not in str(e.value)
    assert os.listdir(tmp_path) == []


def test_write_under_a_file_names_the_destination(tmp_path: Path) -> None:
    (tmp_path / "f").write_bytes(b"")
    dest = str(tmp_path / "f" / "x.csup")
    with pytest.raises(NotFoundError) as e:
        csup_async.write(dest, [{"a": 1}])
    assert e.value.path == dest and ".tmp-" not in str(e.value)


def test_write_onto_a_directory_is_a_store_error(tmp_path: Path) -> None:
    (tmp_path / "d").mkdir()
    with pytest.raises(StoreError) as e:
        csup_async.write(tmp_path / "d", [{"a": 1}])
    assert e.value.path == str(tmp_path / "d") and ".tmp-" not in str(e.value)
    assert sorted(os.listdir(tmp_path)) == ["d"]


@pytest.mark.parametrize("suffix", ["csup", "parquet", "ndjson", "bsup"])
def test_convert_into_a_missing_directory_names_the_output(
        tmp_path: Path, capsys: pytest.CaptureFixture[str], suffix: str) -> None:
    src = tmp_path / "in.ndjson"
    src.write_text('{"a":1}\n')
    out = tmp_path / "absent" / f"x.{suffix}"
    assert main(["convert", str(src), str(out)]) == EXIT_NOT_FOUND
    err = capsys.readouterr().err
    assert err == (f"csup-async: error: {out}: cannot write: no such directory "
                   f"'{tmp_path / 'absent'}'\n")
