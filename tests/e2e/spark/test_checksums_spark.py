"""Checksums on Spark's executors: a corrupt segment fails the query naming column and
segment; ``verifyChecksums=false`` reads the file as stored."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from csup_async.spark.session import spark_unavailable

if spark_unavailable() is not None:
    pytest.skip(spark_unavailable() or "", allow_module_level=True)

from csup_async.spark.session import local_session
from tests.support.checksum_files import PLAIN, ROWS, find_segment, flip_byte, sample_rows


@pytest.fixture(scope="module")
def spark() -> Iterator[Any]:
    session = local_session("csup-checksums", cores=1)
    yield session
    session.stop()


def test_spark_executors_check_and_the_option_turns_it_off(spark: Any, tmp_path: Path) -> None:
    label, index, n, seg = find_segment(PLAIN, 'column "id" (values')
    (tmp_path / "bad.csup").write_bytes(flip_byte(PLAIN, seg, at=seg.length - 1))
    with pytest.raises(Exception, match="checksum mismatch") as got:
        spark.read.format("csup").load(str(tmp_path)).select("id").collect()
    text = str(got.value)
    assert label in text and f"segment {index} of {n} at offset {seg.offset}" in text
    rows = (spark.read.format("csup").option("verifyChecksums", "false")
            .load(str(tmp_path)).select("id").collect())
    good = [r["id"] for r in sample_rows()]
    assert len(rows) == ROWS
    assert sum(r["id"] != g for r, g in zip(rows, good, strict=True)) == 1
