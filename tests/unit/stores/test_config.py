"""One option vocabulary: the same store configuration from Python keywords,
``storage_options=`` (fsspec/s3fs, polars and object_store names), CLI flags and Spark
options; unknown names suggest the nearest; credentials never show."""

from __future__ import annotations

import argparse
import warnings
from typing import Any

import pytest

import csup_async
from csup_async.cli.args import build_parser
from csup_async.cli.sources import source_options
from csup_async.spark.options import parse_options
from csup_async.stores import store_for
from csup_async.stores.config import (
    GCSConfig,
    HTTPConfig,
    RetryConfig,
    S3Config,
    parse_config,
)
from csup_async.stores.retry import RetryPolicy

#: About this library's own layout (its segments, plans, statistics, exact types): written with it.
pytestmark = pytest.mark.usefixtures("own_layout")


ENDPOINT = "http://127.0.0.1:9000"
AKID, SECRET, TOKEN = "AKIDEXAMPLE", "wJalrXUtnFEMIK7MDENGbPxRfiCYEXAMPLEKEY", "SESSIONTOKENXYZ"
WANT_S3 = S3Config(endpoint=ENDPOINT, region="eu-west-1", access_key_id=AKID,
                   secret_access_key=SECRET, session_token=TOKEN, max_connections=8)


def _cli_store(argv: list[str], url: str) -> dict[str, Any]:
    args: argparse.Namespace = build_parser().parse_args(argv)
    return source_options(args, url)[0]


@pytest.mark.parametrize("options", [
    pytest.param({"endpoint": ENDPOINT, "region": "eu-west-1", "access_key_id": AKID,
                  "secret_access_key": SECRET, "session_token": TOKEN,
                  "max_connections": 8}, id="python keywords"),
    pytest.param({"storage_options": {"key": AKID, "secret": SECRET, "token": TOKEN,
                                      "client_kwargs": {"endpoint_url": ENDPOINT,
                                                        "region_name": "eu-west-1"},
                                      "max_pool_connections": 8}}, id="s3fs storage_options"),
    pytest.param({"storage_options": {"aws_access_key_id": AKID,
                                      "aws_secret_access_key": SECRET,
                                      "aws_session_token": TOKEN,
                                      "aws_endpoint_url": ENDPOINT, "aws_region": "eu-west-1",
                                      "max_connections": "8"}},
                 id="polars/object_store storage_options"),
    pytest.param({"endpointUrl": ENDPOINT, "REGION": "eu-west-1", "accessKeyId": AKID,
                  "secret-access-key": SECRET, "sessionToken": TOKEN, "connections": "8"},
                 id="camelCase and dashes"),
])
def test_every_spelling_gives_the_same_s3_config(options: dict[str, Any]) -> None:
    assert parse_config("s3", options) == WANT_S3


def test_spark_options_give_the_same_s3_config() -> None:
    settings = parse_options({"path": "s3://b/p/", "endpoint": ENDPOINT, "region": "eu-west-1",
                              "accessKeyId": AKID, "secretAccessKey": SECRET,
                              "sessionToken": TOKEN, "maxConnections": "8"})
    assert parse_config("s3", settings.store_options("s3://b/p/")) == WANT_S3
    assert SECRET not in repr(settings) and TOKEN not in repr(settings)


def test_cli_flags_give_the_same_config_as_keywords() -> None:
    flags = ["scan", "s3://b/k.csup", "--endpoint", ENDPOINT, "--region", "eu-west-1",
             "--max-connections", "8", "--anonymous", "--no-verify-ssl"]
    want = S3Config(endpoint=ENDPOINT, region="eu-west-1", max_connections=8, anonymous=True,
                    verify_ssl=False)
    assert parse_config("s3", _cli_store(flags, "s3://b/k.csup")) == want
    old = [f if f != "--endpoint" else "--endpoint-url" for f in flags]
    assert parse_config("s3", _cli_store(old, "s3://b/k.csup")) == want
    gcs = _cli_store(["scan", "gs://b/k.csup", "--endpoint", ENDPOINT], "gs://b/k.csup")
    assert parse_config("gcs", gcs) == GCSConfig(endpoint=ENDPOINT)


def test_store_gets_what_the_config_says() -> None:
    store, key = store_for("s3://bkt/a/b.csup", storage_options={
        "anon": "true", "client_kwargs": {"endpoint_url": ENDPOINT}},
        retry=RetryConfig(max_retries=2))
    assert key == "bkt/a/b.csup"
    assert store.endpoint_url == ENDPOINT and store.anonymous and store.path_style
    assert store.retry == RetryPolicy(attempts=3)
    store, _ = store_for("gs://b/k", token="anon", endpoint=ENDPOINT)
    assert "anonymous" in repr(store)
    store, _ = store_for("http://127.0.0.1:1/x.csup", headers='{"Authorization": "Bearer t"}',
                         max_connections=3)
    assert store.limit == 3


def test_a_config_object_and_overrides() -> None:
    base = S3Config(endpoint=ENDPOINT, region="us-east-1")
    assert parse_config("s3", {"config": base, "region": "eu-west-1"}) == S3Config(
        endpoint=ENDPOINT, region="eu-west-1")
    with pytest.raises(csup_async.ConfigError, match="config must be a S3Config"):
        parse_config("s3", {"config": GCSConfig()})


def test_inverted_aliases() -> None:
    assert parse_config("s3", {"allow_invalid_certificates": "true"}).verify_ssl is False
    assert parse_config("s3", {"aws_virtual_hosted_style_request": True}).path_style is False


def test_unknown_key_names_it_and_suggests_the_nearest() -> None:
    with pytest.raises(csup_async.ConfigError) as err:
        parse_config("s3", {"acess_key_id": "x"})
    assert "'acess_key_id'" in str(err.value) and "did you mean 'access_key_id'" in str(
        err.value)
    assert isinstance(err.value, ValueError) and isinstance(err.value, csup_async.CsupError)
    with pytest.raises(csup_async.ConfigError, match="did you mean 'endpoint'"):
        csup_async.open_sync("s3://b/k.csup", endpont=ENDPOINT)
    with pytest.raises(csup_async.ConfigError, match=r"'client_kwargs\.endpoint'"):
        parse_config("s3", {"storage_options": {"client_kwargs": {"endpoint": ENDPOINT}}})
    with pytest.raises(csup_async.ConfigError, match="'region' for gs:// URLs"):
        parse_config("gcs", {"region": "eu"})  # an S3 option on GCS
    with pytest.raises(csup_async.ConfigError, match="did you mean 'max_retries'"):
        parse_config("http", {"retry": {"max_retry": 3}})
    with pytest.raises(csup_async.ConfigError, match="did you mean"):
        parse_options({"path": "/x", "endpointt": "x"})


@pytest.mark.parametrize(("options", "message"), [
    ({"max_connections": "many"}, "max_connections must be an integer"),
    ({"max_connections": 0}, "max_connections must be >= 1"),
    ({"max_connections": 2.5}, "max_connections must be an integer, not float"),
    ({"anonymous": "perhaps"}, "anonymous must be true or false"),
    ({"connect_timeout": -1}, "connect_timeout must be positive"),
    ({"region": 5}, "region must be a string, not int"),
    ({"secret_access_key": 12345678}, "secret_access_key must be a string, not int"),
    ({"retry": 3}, "retry must be a RetryConfig"),
    ({"storage_options": ["key"]}, "storage_options must be a mapping"),
    ({"endpoint": "http://a", "endpoint_url": "http://b"}, "both set endpoint, differently"),
])
def test_wrong_types_are_named(options: dict[str, Any], message: str) -> None:
    with pytest.raises(csup_async.ConfigError, match=message):
        parse_config("s3", options)


def test_credentials_never_in_repr_or_errors() -> None:
    cfg = parse_config("s3", {"key": AKID, "secret": SECRET, "token": TOKEN})
    assert AKID not in repr(cfg) and SECRET not in repr(cfg) and TOKEN not in repr(cfg)
    assert "<hidden>" in repr(cfg)
    http = HTTPConfig(headers={"Authorization": f"Bearer {TOKEN}"})
    assert TOKEN not in repr(http)
    assert TOKEN not in repr(GCSConfig(token=TOKEN))
    for bad in ({"secret_access_key": [SECRET]}, {"session_token": {"t": TOKEN}},
                {"headers": f"Authorization: {TOKEN}"}, {"key": AKID, "secreet": SECRET}):
        with pytest.raises(csup_async.ConfigError) as err:
            parse_config("s3" if "headers" not in bad else "http", bad)
        assert SECRET not in str(err.value) and TOKEN not in str(err.value)


def test_open_limit_is_the_deprecated_name_of_max_connections(tmp_path: Any) -> None:
    """``limit`` means rows in scan, read and the CLI; in open it was a connection count."""
    path = str(tmp_path / "t.csup")
    csup_async.write(path, [{"a": i} for i in range(5)])
    with pytest.warns(DeprecationWarning, match="max_connections"):
        opener = csup_async.open("http://127.0.0.1:1/x.csup", limit=3)
    assert opener.options == {"max_connections": 3}
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        assert csup_async.read(path, limit=2).num_rows == 2  # rows, no warning
    with pytest.raises(csup_async.CsupError, match="disagree"), pytest.warns(
            DeprecationWarning):
        csup_async.open("http://127.0.0.1:1/x.csup", limit=3, max_connections=4)


def test_storage_options_empty_for_a_local_path(tmp_path: Any) -> None:
    """polars passes storage_options=None for local files; that is no option."""
    path = str(tmp_path / "t.csup")
    csup_async.write(path, [{"a": 1}])
    assert csup_async.read(path, storage_options=None).num_rows == 1
    with pytest.raises(csup_async.ConfigError, match="unknown option 'region' for local"):
        csup_async.read(path, region="eu-west-1")


def test_the_docs_table_lists_every_option_and_alias() -> None:
    """docs/stores.md's table is the reference: an option or alias added without a row
    (or a word in one) fails here."""
    import dataclasses
    from pathlib import Path

    from csup_async.stores.config import aliases_of

    text = (Path(__file__).parents[3] / "docs" / "stores.md").read_text()
    rows = {line.split("|")[1].strip().strip("`"): line for line in text.splitlines()
            if line.startswith("| `")}
    for kind, cls in (("s3", S3Config), ("gcs", GCSConfig), ("http", HTTPConfig)):
        for f in dataclasses.fields(cls):
            assert f.name in rows, f.name
            for alias in aliases_of(kind, f.name):
                assert f"`{alias}`" in rows[f.name], (f.name, alias)


def test_gcsfs_token_kinds(tmp_path: Any) -> None:
    """gcsfs' token names a kind of credentials, or a key file: the first map, the file
    is refused with the way to use it (sent as a bearer token it would be a secret leak
    and a 401)."""
    assert parse_config("gcs", {"token": "anon"}) == GCSConfig(anonymous=True)
    assert parse_config("gcs", {"token": "google_default"}) == GCSConfig(adc=True)
    key = tmp_path / "key.json"
    key.write_text("{}")
    with pytest.raises(csup_async.ConfigError, match="GOOGLE_APPLICATION_CREDENTIALS") as e:
        parse_config("gcs", {"storage_options": {"token": str(key)}})
    assert str(key) not in str(e.value)
