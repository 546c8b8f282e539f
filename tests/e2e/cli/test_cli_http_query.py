"""HTTP(S) URLs with query strings (signed URLs) given to the CLI are objects, not globs."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

import csup_async
from csup_async.cli import main
from csup_async.stores.listing import has_glob


def test_a_query_string_is_not_a_glob() -> None:
    assert not has_glob("https://h.example/a.csup?X-Amz-Signature=abc&x=[1]")
    assert has_glob("https://h.example/a*.csup") and has_glob("s3://b/a?.csup")


def test_several_signed_http_urls_read_as_one_dataset(range_server: Any, tmp_path: Path,
                                                       capsys: pytest.CaptureFixture[str]
                                                       ) -> None:
    urls = []
    for k in range(2):
        src = tmp_path / f"p{k}.csup"
        csup_async.write(src, [{"k": k, "i": i} for i in range(3)])
        range_server.put(f"q/p{k}.csup", src.read_bytes())
        urls.append(range_server.url(f"q/p{k}.csup") + f"?X-Amz-Signature=sig{k}&token=t")
    code = main(["scan", *urls, "-c", "k,i", "--format", "json"])
    out, err = capsys.readouterr()
    assert code == 0, err
    assert [json.loads(x) for x in out.splitlines()] == [
        {"k": k, "i": i} for k in range(2) for i in range(3)]
    assert "sig0" not in err and "sig1" not in err
