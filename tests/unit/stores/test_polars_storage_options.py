"""polars' and object_store's own ``storage_options`` names work (issue #39, item 18),
and a missing bucket is named as one (item 21), through ``read`` against a real S3
server (moto) on 127.0.0.1."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

import csup_async
from csup_async import ConfigError, NotFoundError
from csup_async.stores.config import GCSConfig, S3Config, parse_config


def _file(tmp_path: Path) -> bytes:
    p = tmp_path / "f.csup"
    csup_async.write(p, [{"i": i} for i in range(100)])
    return p.read_bytes()


def _polars_options(moto_s3: Any) -> dict[str, Any]:
    """What a polars user passes to pl.scan_parquet(..., storage_options=...): text."""
    return {"aws_access_key_id": moto_s3.ACCESS_KEY,
            "aws_secret_access_key": moto_s3.SECRET_KEY, "aws_region": moto_s3.REGION,
            "aws_endpoint_url": moto_s3.endpoint, "aws_allow_http": "true"}


def test_polars_storage_options_read_from_s3(moto_s3: Any, tmp_path: Path) -> None:
    key = moto_s3.put("polars/f.csup", _file(tmp_path))
    opts = _polars_options(moto_s3)
    assert csup_async.read(f"s3://{key}", storage_options=opts).num_rows == 100
    opts = {**opts, "aws_endpoint": opts.pop("aws_endpoint_url")}  # object_store's name
    assert csup_async.read(f"s3://{key}", storage_options=opts).num_rows == 100
    pl = pytest.importorskip("polars")
    lf = csup_async.scan_polars(f"s3://{key}", storage_options=_polars_options(moto_s3))
    assert lf.select(pl.col("i").sum()).collect().item() == sum(range(100))


def test_allow_http_false_refuses_an_http_endpoint() -> None:
    with pytest.raises(ConfigError, match="allow_http"):
        parse_config("s3", {"storage_options": {"aws_endpoint": "http://127.0.0.1:9",
                                                "aws_allow_http": "false"}})
    assert parse_config("s3", {"aws_allow_http": True}) == S3Config(allow_http=True)
    assert parse_config("s3", {"aws_endpoint": "https://127.0.0.1:9", "aws_allow_http": False}
                        ).endpoint == "https://127.0.0.1:9"


def test_object_stores_google_names_map_to_the_gcs_config(tmp_path: Path) -> None:
    key_file = str(tmp_path / "sa.json")
    cfg = parse_config("gcs", {"storage_options": {"google_service_account": key_file,
                                                   "google_allow_http": "true"}})
    assert cfg == GCSConfig(service_account=key_file, allow_http=True)
    secret = '{"type": "service_account", "private_key": "SECRET"}'
    cfg = parse_config("gcs", {"google_service_account_key": secret})
    assert cfg.service_account_key == secret and "SECRET" not in repr(cfg)
    with pytest.raises(ConfigError, match="not both"):
        parse_config("gcs", {"service_account": key_file, "service_account_key": secret})


def test_an_unusable_service_account_file_is_named(gcs_emulator: Any, tmp_path: Path) -> None:
    pytest.importorskip("google.auth")
    missing = str(tmp_path / "missing.json")
    with pytest.raises(csup_async.CsupError, match="credentials"):
        csup_async.read(f"gs://{gcs_emulator.BUCKET}/x.csup", endpoint=gcs_emulator.endpoint,
                        storage_options={"google_service_account": missing})


def test_a_missing_bucket_says_the_bucket_does_not_exist(moto_s3: Any, tmp_path: Path
                                                         ) -> None:
    opts = moto_s3.store_options()
    with pytest.raises(NotFoundError, match="the bucket does not exist"):
        csup_async.read("s3://no-such-bucket-here/f.csup", **opts)
    bucket = moto_s3.put("b/f.csup", _file(tmp_path)).split("/")[0]
    with pytest.raises(NotFoundError, match="no such object"):
        csup_async.read(f"s3://{bucket}/b/missing.csup", **opts)


def test_gcs_answer_for_a_missing_bucket_is_named() -> None:
    """GCS' JSON error for a missing bucket (its documented message; the emulator sends
    none), as the store maps it."""
    from csup_async.stores._aio import error_detail
    from csup_async.stores._ranged import status_error

    body = b'{"error": {"code": 404, "message": "The specified bucket does not exist."}}'
    err = status_error(404, "gs://nope/x.csup", detail=error_detail(body))
    assert isinstance(err, NotFoundError) and "the bucket does not exist" in str(err)
    err = status_error(404, "gs://b/x.csup", detail=error_detail(
        b'{"error": {"code": 404, "message": "No such object: b/x.csup"}}'))
    assert "no such object" in str(err)
