"""A test lake on the store a test is parametrised with (local disk, moto's S3, the GCS
emulator), uploaded once per name for the whole session."""

from __future__ import annotations

from typing import Any

import pytest

from bench.lake_builder import LakeBuilder

_published: set[str] = set()


def publish(request: pytest.FixtureRequest, b: LakeBuilder, name: str
            ) -> tuple[str, dict[str, Any]]:
    """The builder's lake as a URL on the requested store (uploaded once per name)."""
    kind = request.param
    if kind == "local":
        return str(b.root), {}
    if kind == "s3":
        s3 = request.getfixturevalue("moto_s3")
        if name not in _published:
            b.upload(s3.put, name)
            _published.add(name)
        return f"s3://{s3.BUCKET}/{name}", s3.store_options()
    gcs = request.getfixturevalue("gcs_emulator")
    if name not in _published:
        b.upload(gcs.put, name)
        _published.add(name)
    return f"gs://{gcs.BUCKET}/{name}", {"endpoint": gcs.endpoint}
