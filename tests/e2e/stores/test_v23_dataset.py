"""A Dataset of CSUP v23 files (the default target, super main's layout) over S3 (moto on
127.0.0.1, through a counting proxy): a filter on a column super's min/max cover skips
whole files and objects with no GET of their data, and the multi-file plan packs the files
it reads into tasks and counts what it skipped.

A profile of 4 KiB first reads makes each file "large": the tail read holds its trailer
and footer, the head read its objects' metadata, and the data is a request of its own.
"""

from __future__ import annotations

import dataclasses
import io
import json
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest

import csup_async
import planner as P
from csup_async.readers import headhint
from tests.support.fault_proxy import FaultProxy

PARTS = (Path(__file__).resolve().parents[2] / "data" / "real" / "super-main" / "minmax"
         / "parts.csup")
SMALL_READS = dataclasses.replace(P.get_profile("s3"), tail_min=4096, tail_max=4096,
                                  max_gap=1024)
#: a round trip worth 10 KB: the open hops from object to object (larger objects than
#: that are not read in one window with the metadata), so data is read by the scan
HOPS = dataclasses.replace(SMALL_READS, latency=1e-4)
ROWS = 20_000


@pytest.fixture(autouse=True)
def _no_head_hints() -> Iterator[None]:
    headhint.forget()
    yield
    headhint.forget()


@pytest.fixture
def proxy(moto_s3: Any) -> Iterator[FaultProxy]:
    p = FaultProxy(int(moto_s3.endpoint.rsplit(":", 1)[1])).start()
    yield p
    p.stop()


def _file(k: int, rows: int = ROWS) -> bytes:
    ids = np.arange(k * rows, (k + 1) * rows, dtype=np.int64)
    table = pa.table({"id": ids, "s": pa.array([f"row-{i % 97}" for i in ids])})
    buf = io.BytesIO()
    csup_async.write(buf, table)  # target "super": CSUP v23
    return buf.getvalue()


def _gets(proxy: FaultProxy) -> list[str]:
    return [q.target for q in proxy.requests() if q.method == "GET"]


async def test_files_min_max_rule_out_get_no_data_request(moto_s3, proxy):
    keys = [moto_s3.put(f"v23ds/f{k}.csup", _file(k)) for k in range(6)]
    assert _file(0)[:4] == b"CSUP"  # a v23 object header: super main's layout
    opts = {**moto_s3.store_options(), "endpoint_url": proxy.endpoint}
    flt = f"id >= {4 * ROWS + 5} and id < {5 * ROWS - 7}"
    async with csup_async.open_dataset([f"s3://{k}" for k in keys], profile=SMALL_READS,
                                       **opts) as ds:
        opened = _gets(proxy)
        proxy.reset()
        plan = await ds.plan(["s"], filter=flt)
        assert _gets(proxy) == []  # planning: metadata only, held since the open
        res = await ds.scan(["id", "s"], filter=flt)
        during = _gets(proxy)
    print(plan.explain(), "\nscan GETs", during)
    assert len(opened) == 12  # each file: the tail (footer) and the head (metadata)
    # the plan: one file to read (packed into a task), five ruled out by min/max
    assert [f.name for f in plan.files] == [f"s3://{keys[4]}"]
    assert len(plan.tasks) == 1 and plan.request_count >= 1 and plan.bytes_to_read > 0
    assert {p.name for p in plan.pruned} == {f"s3://{keys[i]}" for i in (0, 1, 2, 3, 5)}
    assert all(p.reason == "filter false by statistics" for p in plan.pruned)
    assert "5 pruned" in plan.explain()
    # the scan: data requests for file 4 alone, its rows exact
    assert during and all(t.endswith(keys[4].split("/", 1)[1]) for t in during), during
    assert res.column("id").to_pylist() == list(range(4 * ROWS + 5, 5 * ROWS - 7))
    assert len(res.plan.files) == 1 and len(res.plan.pruned) == 5
    assert "needed no data request" in res.plan.explain()


async def test_objects_a_filter_rules_out_are_not_read_and_counted(moto_s3, proxy):
    """A file of three objects (120,000 rows each at most): the plan and the scan read the
    objects whose min/max may match, and say how many they skipped."""
    key = moto_s3.put("v23obj/ids.csup", _file(0, 250_000))
    opts = {**moto_s3.store_options(), "endpoint_url": proxy.endpoint}
    async with csup_async.open_dataset([f"s3://{key}"], profile=HOPS, **opts) as ds:
        assert len(ds.readers[0].meta.objects) == 3
        plan = await ds.plan(["id"], filter="id >= 130000 and id < 140000")
        whole = await ds.plan(["id"])
        proxy.reset()
        res = await ds.scan(["id"], filter="id >= 130000 and id < 140000")
        read = res.stats.bytes_read
        ranges = [q.range for q in proxy.requests() if q.method == "GET"]
        obj = ds.readers[0].meta.objects[1]
    print(plan.explain())
    assert plan.objects_pruned == 2 and whole.objects_pruned == 0
    assert "objects ruled out by their min/max (SuperDB files): 2" in plan.explain()
    assert plan.bytes_needed < whole.bytes_needed / 2
    assert res.column("id").to_pylist() == list(range(130_000, 140_000))
    assert res.plan.objects_pruned == 2
    assert "ruled out by their min/max: 2" in res.plan.explain()
    assert 0 < read <= plan.bytes_to_read  # the middle object's data, no more
    for r in ranges:  # every GET within the middle object
        lo, hi = map(int, r.split("=", 1)[1].split("-"))
        assert obj.offset <= lo and hi < obj.end, (r, obj.offset, obj.end)


async def test_super_mains_file_of_two_parts(moto_s3, proxy):
    """super main's own file (``cat`` of two files: two parts, six constant objects):
    the scan's rows are what super counts, the objects and parts ruled out unread."""
    key = moto_s3.put("v23parts/parts.csup", PARTS.read_bytes())
    counts = {r["g"]: r["count"] for r in map(json.loads, PARTS.with_name(
        "parts.counts.json.out").read_text().splitlines())}
    opts = {**moto_s3.store_options(), "endpoint_url": proxy.endpoint}
    async with csup_async.open_dataset([f"s3://{key}"], **opts) as ds:
        r = ds.readers[0]
        assert len(r.parts) == 2 and len(r.meta.objects) == 6
        proxy.reset()
        assert await ds.count_rows("g >= 4") == counts[4] + counts[5]
        res = await ds.scan(["g"], filter="g >= 4")
        plan = await ds.plan(["g"], filter="g >= 4")
        none = await ds.get_fragments("g > 5")
        assert await ds.scan(["g"], filter="g > 5") is not None
    assert _gets(proxy) == []  # the tail read held the whole small file
    got = res.column("g").to_pylist()
    assert {g: got.count(g) for g in set(got)} == {4: counts[4], 5: counts[5]}
    assert plan.objects_pruned == 4 and none == []


def test_the_cli_plans_a_directory_of_v23_files(tmp_path: Path, capsys: Any) -> None:
    from csup_async.cli import main

    for k in range(3):
        (tmp_path / f"f{k}.csup").write_bytes(_file(k, 1000))
    assert main(["plan", str(tmp_path) + "/", "-c", "s", "--where", "id >= 2000"]) == 0
    out, err = capsys.readouterr()
    assert "1 file to read, 2 pruned" in out and "f2.csup" in out.split("pruned:")[0]
    assert out.count("filter false by statistics") == 2 and "Traceback" not in err


async def test_local_directory_dataset_prunes_v23_files(tmp_path: Path) -> None:
    """The same through a directory on disk."""
    for k in range(3):
        (tmp_path / f"f{k}.csup").write_bytes(_file(k, 1000))
    async with csup_async.open_dataset(str(tmp_path)) as ds:
        kept = await ds.get_fragments("id < 1500")
        n = await ds.count_rows("id < 1500")
        plan = await ds.plan(["s"], filter="id >= 2000")
        kept_r, pruned_r = ds.prune_by_statistics("id >= 1000")
    assert [Path(r.key).name for r in pruned_r] == ["f0.csup"] and len(kept_r) == 2
    assert [Path(f.url).name for f in kept] == ["f0.csup", "f1.csup"]
    assert n == 1500
    assert [Path(f.name).name for f in plan.files] == ["f2.csup"] and len(plan.pruned) == 2


def test_polars_over_v23_files_pushes_the_filter_in(moto_s3, proxy):
    """``scan_polars`` hands its filter to the dataset scan: the files
    it rules out by min/max get no request after the open."""
    pl = pytest.importorskip("polars")
    keys = [moto_s3.put(f"v23pl/f{k}.csup", _file(k)) for k in range(4)]
    opts = {**moto_s3.store_options(), "endpoint_url": proxy.endpoint}
    lf = csup_async.scan_polars([f"s3://{k}" for k in keys], profile=SMALL_READS, **opts)
    proxy.reset()
    got = lf.filter(pl.col("id") >= 3 * ROWS + 10).select("id").collect()
    assert got["id"].to_list() == list(range(3 * ROWS + 10, 4 * ROWS))
    reads = _gets(proxy)
    assert reads and all(t.endswith("v23pl/f3.csup") for t in reads), reads

