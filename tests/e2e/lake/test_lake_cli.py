"""``csup-async lake``: ls, scan, explain and load on lakes on disk and in moto's S3."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from bench.lake_builder import LakeBuilder, ksuid_str, rec
from csup_async.cli import main

ROW = rec(("ts", "int64"), ("msg", "string"))


def run(args: list[Any], capsys: pytest.CaptureFixture[str]) -> tuple[int, str, str]:
    code = main([str(a) for a in args])
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.fixture
def lake(tmp_path: Path) -> tuple[LakeBuilder, Any, Any]:
    b = LakeBuilder(tmp_path / "lake")
    p = b.create_pool("logs", stride=16)
    _, o1 = b.load(p, "main", [{"ts": i, "msg": f"a{i}"} for i in range(100)], ROW)
    _, o2 = b.load(p, "main", [{"ts": i, "msg": f"b{i}"} for i in range(500, 600)], ROW)
    b.create_pool("other", key="k", order="desc")
    return b, o1, o2


def test_ls_pools_and_pool(lake: Any, capsys: pytest.CaptureFixture[str]) -> None:
    b, o1, o2 = lake
    code, out, err = run(["lake", "ls", b.root], capsys)
    assert code == 0, err
    lines = out.splitlines()
    assert [ln.split()[0] for ln in lines] == ["logs", "other"]
    assert lines[1].endswith("key k order desc")
    code, out, _ = run(["lake", "ls", b.root, "--pool", "logs@main"], capsys)
    assert code == 0
    assert out.splitlines()[0].startswith("branch main commit ")
    assert f"{o1.name} 100 rows {o1.size} bytes key [0, 99]" in out
    assert f"{o2.name} 100 rows {o2.size} bytes key [500, 599]" in out


def test_scan_with_where_and_explain(lake: Any, capsys: pytest.CaptureFixture[str]) -> None:
    b, o1, o2 = lake
    code, out, err = run(["lake", "scan", b.root, "--pool", "logs", "-c", "ts,msg",
                          "--where", "ts>=40", "--where", "ts<45", "--explain", "--stats"],
                         capsys)
    assert code == 0, err
    assert [json.loads(x) for x in out.splitlines()] == [
        {"ts": t, "msg": f"a{t}"} for t in range(40, 45)]
    assert f"skip {o2.name} (min/max)" in err and f"read {o1.name} [0, 99]" in err
    assert "seek chunks" in err and "stats: " in err
    code, out, _ = run(["lake", "explain", b.root, "--pool", "logs", "--where", "ts==550",
                        "--json"], capsys)
    d = json.loads(out)
    assert d["pruned_by_min_max"] == [o1.name] and [k["id"] for k in d["kept"]] == [o2.name]
    [kept] = d["kept"]
    assert 0 < kept["bytes"] < o2.size and len(kept["ranges"]) == 1


def test_load_then_scan_in_a_subprocess(lake: Any, tmp_path: Path) -> None:
    b, _, _ = lake
    src = tmp_path / "rows.ndjson"
    src.write_text("".join(json.dumps({"ts": 300 - i, "msg": f"n{i}"}) + "\n"
                           for i in range(5)))
    cmd = [sys.executable, "-m", "csup_async.cli", "lake"]
    r = subprocess.run([*cmd, "load", str(b.root), "--pool", "logs@main", str(src), "-m", "hi"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    commit = r.stdout.split()[-1]
    r = subprocess.run([*cmd, "scan", str(b.root), "--pool", f"logs@{commit}", "-c", "ts",
                        "--where", "ts>200", "--where", "ts<400"],
                       capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stderr
    assert [json.loads(x)["ts"] for x in r.stdout.splitlines()] == [296, 297, 298, 299, 300]


def test_lake_on_s3(lake: Any, moto_s3: Any, capsys: pytest.CaptureFixture[str],
                    monkeypatch: pytest.MonkeyPatch) -> None:
    b, o1, _ = lake
    prefix = f"cli-{ksuid_str(o1.id)}"
    b.upload(moto_s3.put, prefix)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", moto_s3.ACCESS_KEY)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", moto_s3.SECRET_KEY)
    url = f"s3://{moto_s3.BUCKET}/{prefix}"
    flags = ["--endpoint-url", moto_s3.endpoint, "--region", "us-east-1"]
    code, out, err = run(["lake", "scan", url, "--pool", "logs", "--where", "ts==7", *flags],
                         capsys)
    assert code == 0, err
    assert [json.loads(x) for x in out.splitlines()] == [{"ts": 7, "msg": "a7"}]
    assert moto_s3.SECRET_KEY not in out + err


def test_bad_lake_is_one_clear_error(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, _, err = run(["lake", "ls", tmp_path], capsys)
    assert code != 0 and "lake.zng" in err and "not a Zed lake" in err
    assert "Traceback" not in err


def test_time_travel_flag(lake: Any, capsys: pytest.CaptureFixture[str]) -> None:
    b, o1, o2 = lake
    # branch journal: 1 adds main, 2 loads o1, 3 loads o2
    code, out, err = run(["lake", "ls", b.root, "--pool", "logs", "--at", "2"], capsys)
    assert code == 0, err
    assert o1.name in out and o2.name not in out
    code, out, _ = run(["lake", "scan", b.root, "--pool", "logs", "--at", "2", "-c", "ts",
                        "--where", "ts>=500"], capsys)
    assert code == 0 and out == ""
