"""``dir(csup_async)`` shows the public API before any of it is used (the lazy names
load on first use), and ``__all__`` agrees with it and with what the module gives."""

from __future__ import annotations

import subprocess
import sys

import csup_async


def test_dir_lists_the_public_api_in_a_fresh_process() -> None:
    code = ("import csup_async, json; "
            "print(json.dumps([n for n in dir(csup_async) if not n.startswith('_')]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True).stdout
    import json

    names = json.loads(out)
    for name in ("open", "write", "read", "open_sync", "open_dataset", "scan_polars",
                 "S3Config", "GCSConfig", "HTTPConfig", "RetryConfig", "ConfigError", "col"):
        assert name in names, name
    assert sorted(names) == sorted(csup_async.__all__)


def test_every_name_in_all_resolves() -> None:
    for name in csup_async.__all__:
        assert getattr(csup_async, name) is not None, name
    assert "__version__" in dir(csup_async)
    assert issubclass(csup_async.ConfigError, ValueError)
    assert issubclass(csup_async.ConfigError, csup_async.CsupError)
