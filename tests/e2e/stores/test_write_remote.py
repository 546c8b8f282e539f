"""``csup_async.write`` and ``csup-async convert`` to object store URLs: the file is put
whole through the store (the lake's put), so it reads back from the same URL; both
used to end in a raw FileNotFoundError (``open("s3://...")``)."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest

import csup_async
from csup_async.cli import EXIT_STORE, main
from csup_async.stores import FsspecStore

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


ROWS = [{"id": i, "name": f"n{i}", "tags": ["a"] * (i % 3)} for i in range(500)]


async def _read(url: str, **opts: Any) -> list[Any]:
    async with csup_async.open(url, **opts) as r:
        return await r.read_rows()


@pytest.fixture(params=["s3", "gcs"])
def bucket_url(request: pytest.FixtureRequest, tmp_path: Path
               ) -> tuple[str, dict[str, Any], list[str], dict[str, str]]:
    """(URL prefix, store options, CLI flags, environment) of an emulated bucket."""
    if request.param == "s3":
        s3 = request.getfixturevalue("moto_s3")
        env = {"AWS_ACCESS_KEY_ID": s3.ACCESS_KEY, "AWS_SECRET_ACCESS_KEY": s3.SECRET_KEY}
        return (f"s3://{s3.BUCKET}/w-{tmp_path.name}", s3.store_options(),
                ["--endpoint-url", s3.endpoint, "--region", s3.REGION], env)
    gcs = request.getfixturevalue("gcs_emulator")
    return (f"gs://{gcs.BUCKET}/w-{tmp_path.name}", {"endpoint": gcs.endpoint},
            ["--endpoint-url", gcs.endpoint], {})


def test_write_puts_the_file_on_the_store(bucket_url: Any) -> None:
    prefix, opts, _, _ = bucket_url
    url = f"{prefix}/rows.csup"
    assert csup_async.write(url, ROWS, segment_thresh=1024, **opts) == len(ROWS)
    assert asyncio.run(_read(url, **opts)) == ROWS
    csup_async.write(url, ROWS[:3], **opts)  # a plain put replaces the object, whole
    assert asyncio.run(_read(url, **opts)) == ROWS[:3]


def test_write_from_async_code_through_a_given_store(moto_s3: Any, tmp_path: Path) -> None:
    from csup_async.stores import S3Store

    url = f"s3://{moto_s3.BUCKET}/given-{tmp_path.name}.csup"

    async def go() -> list[Any]:
        async with S3Store(**moto_s3.store_options()) as store:
            # called inside a running loop: the put runs on a loop of its own
            assert csup_async.write(url, ROWS[:10], store=store) == 10
        return await _read(url, **moto_s3.store_options())

    assert asyncio.run(go()) == ROWS[:10]


def test_if_absent_creates_once_on_s3_and_locally(moto_s3: Any, tmp_path: Path) -> None:
    opts = moto_s3.store_options()
    for url, extra in ((f"s3://{moto_s3.BUCKET}/once-{tmp_path.name}.csup", opts),
                       (str(tmp_path / "once.csup"), {})):
        csup_async.write(url, ROWS[:2], if_absent=True, **extra)
        with pytest.raises(csup_async.ObjectExistsError, match="exists") as err:
            csup_async.write(url, ROWS[:5], if_absent=True, **extra)
        assert err.value.path is not None
        assert asyncio.run(_read(url, **extra)) == ROWS[:2]  # the first object, untouched
    assert sorted(p.name for p in tmp_path.iterdir()) == ["once.csup"]  # no temporaries


def test_write_through_fsspec_and_its_limits() -> None:
    import fsspec

    fs = fsspec.filesystem("memory")
    store = FsspecStore(fs)
    csup_async.write("memory://w/rows.csup", ROWS[:7], store=store)
    assert asyncio.run(_read("memory://w/rows.csup", store=store)) == ROWS[:7]
    with pytest.raises(csup_async.StoreError, match="cannot put an object only if absent"):
        csup_async.write("memory://w/rows.csup", ROWS, store=store, if_absent=True)
    assert asyncio.run(_read("memory://w/rows.csup", store=store)) == ROWS[:7]


def test_a_store_that_cannot_write_is_a_clear_error() -> None:
    with pytest.raises(csup_async.StoreError, match="http store cannot write") as err:
        csup_async.write("http://127.0.0.1:9/x.csup", ROWS)
    assert err.value.path == "http://127.0.0.1:9/x.csup"
    with pytest.raises(csup_async.ArgumentError, match="unknown option 'endpoint_url'"):
        csup_async.write("local.csup", ROWS, endpoint_url="http://127.0.0.1:9")


def test_cli_convert_to_an_object_store(bucket_url: Any, tmp_path: Path,
                                        capsys: pytest.CaptureFixture[str],
                                        monkeypatch: pytest.MonkeyPatch) -> None:
    prefix, opts, flags, env = bucket_url
    for k, v in env.items():
        monkeypatch.setenv(k, v)
    src = tmp_path / "rows.ndjson"
    src.write_text("".join(json.dumps(r) + "\n" for r in ROWS))
    url = f"{prefix}/converted.csup"
    assert main(["convert", str(src), url, *flags]) == 0
    err = capsys.readouterr().err
    assert f"wrote {len(ROWS)} values to {url}" in err
    assert asyncio.run(_read(url, **opts)) == ROWS
    for secret in env.values():
        assert secret not in err


def test_cli_convert_to_a_store_that_cannot_write(tmp_path: Path,
                                                  capsys: pytest.CaptureFixture[str]) -> None:
    src = tmp_path / "rows.ndjson"
    src.write_text('{"a": 1}\n')
    assert main(["convert", str(src), "http://127.0.0.1:9/x.csup"]) == EXIT_STORE
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1 and "cannot write" in err
    assert "Traceback" not in err
