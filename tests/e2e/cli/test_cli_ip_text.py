"""ip and net values print as super prints them: an IPv4-mapped IPv6 address keeps its
IPv4 part dotted (``::ffff:0.0.0.0``), where Python before 3.13 writes hex groups."""

from __future__ import annotations

import csv
import io
import ipaddress
import json
import subprocess

import pytest

import csup_async
from csup_async.cli import main
from tests.support import realtools

ROWS = [
    {"a": ipaddress.ip_address("::ffff:0:0"), "n": ipaddress.ip_network("::ffff:a00:0/104")},
    {"a": ipaddress.ip_address("::ffff:192.168.1.2"), "n": ipaddress.ip_network("10.0.0.0/8")},
    {"a": ipaddress.ip_address("::102:304"), "n": ipaddress.ip_network("fe80::/10")},
    {"a": ipaddress.ip_address("1.2.3.4"), "n": None},
]
#: what super main prints for these rows (``super -j``), written down from its output
WANT = [
    {"a": "::ffff:0.0.0.0", "n": "::ffff:10.0.0.0/104"},
    {"a": "::ffff:192.168.1.2", "n": "10.0.0.0/8"},
    {"a": "::102:304", "n": "fe80::/10"},
    {"a": "1.2.3.4", "n": None},
]


@pytest.mark.parametrize("target", ["super", "csup-async"])
def test_scan_prints_ips_as_super_does(tmp_path, capsys, target):
    p = tmp_path / "ips.csup"
    csup_async.write(str(p), ROWS, target=target)
    assert main(["scan", str(p), "--format", "json"]) == 0
    assert [json.loads(x) for x in capsys.readouterr().out.splitlines()] == WANT
    assert main(["scan", str(p), "--format", "csv"]) == 0
    got = list(csv.DictReader(io.StringIO(capsys.readouterr().out)))
    assert got == [{k: v or "" for k, v in w.items()} for w in WANT]
    exe = realtools.find(realtools.SUPER_MAIN, "super") if target == "super" else None
    if exe is not None:  # and the real tool agrees with what is written down above
        r = subprocess.run([str(exe), "-j", str(p)], capture_output=True, text=True,
                           timeout=60, check=True)
        assert [json.loads(x) for x in r.stdout.splitlines()] == WANT
