"""S3 credentials never reach a log: the mask is installed by the first S3 signer,
not by importing the module (which must leave the process's logging alone)."""

from __future__ import annotations

import logging
import os
import subprocess
import sys
from pathlib import Path

import pytest

import csup_async
from csup_async.stores import S3Store
from csup_async.writers.writing import write
from tests.support import servers


def test_importing_s3_leaves_the_log_record_factory_alone() -> None:
    code = ("import logging\n"
            "before = logging.getLogRecordFactory()\n"
            "import csup_async, csup_async.stores.s3, csup_async.stores.logmask\n"
            "from csup_async.stores import S3Store\n"
            "S3Store(access_key_id='k', secret_access_key='s')\n"  # made, not yet signing
            "assert logging.getLogRecordFactory() is before, 'import replaced the factory'\n")
    subprocess.run([sys.executable, "-c", code], check=True, env=dict(os.environ))


async def test_after_an_s3_scan_log_records_hide_the_secret_and_signatures(
        moto_s3: servers.MotoS3, tmp_path: Path, caplog: pytest.LogCaptureFixture) -> None:
    write(tmp_path / "one.csup", [{"a": 1}, {"a": 2}])
    key = moto_s3.put("logmask/one.csup", (tmp_path / "one.csup").read_bytes())
    store = S3Store(endpoint_url=moto_s3.endpoint, region=moto_s3.REGION,
                    access_key_id=moto_s3.ACCESS_KEY, secret_access_key=moto_s3.SECRET_KEY)
    async with store, csup_async.open(f"s3://{key}", store=store) as r:
        assert (await r.scan(["a"])).to_pylist() == [{"a": 1}, {"a": 2}]
    caplog.set_level(logging.DEBUG)
    signed = (f"GET https://b.s3.amazonaws.com/k?X-Amz-Credential={moto_s3.ACCESS_KEY}/x"
              "&X-Amz-Signature=0123456789abcdef&X-Amz-Security-Token=tok-123456789")
    logging.getLogger("botocore.endpoint").debug("sending %s", signed)
    logging.getLogger("botocore.auth").debug("key in a message: %s", moto_s3.SECRET_KEY)
    logging.getLogger("urllib3.connectionpool").debug(
        "Authorization: AWS4-HMAC-SHA256 Credential=%s/20260101, Signature=feedface",
        moto_s3.ACCESS_KEY)
    texts = [rec.getMessage() for rec in caplog.records]
    assert len(texts) == 3
    for text in texts:
        assert moto_s3.SECRET_KEY not in text and moto_s3.ACCESS_KEY not in text, text
        assert "0123456789abcdef" not in text and "tok-123456789" not in text, text
        assert "feedface" not in text, text
    assert "[redacted]" in texts[0] and "https://b.s3.amazonaws.com/k" in texts[0]
