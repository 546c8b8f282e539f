"""Values print as super main prints them (``super -j``, ``-f csv``): an IPv4-mapped IPv6
address keeps its IPv4 part dotted (``::ffff:0.0.0.0``, where Python before 3.13 writes hex
groups); a type value is its super main text in angle brackets, a named type by its name."""

from __future__ import annotations

import csv
import io
import ipaddress
import json
import subprocess

import pytest

import csup_async
from csup_async.cli import main
from csup_async.model.types import INT64, STRING, ArrayType, Field, NamedType, RecordType, UnionType
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


TYPES = [{"t": NamedType("foo", INT64), "u": RecordType((Field("a", STRING),)),
          "v": UnionType((INT64, STRING)), "w": ArrayType(INT64)}]
#: super main's ``-j`` (and ``-f csv``) of these values, written down from its output
TYPES_WANT = [{"t": "<foo>", "u": "<{a:string}>", "v": "<int64|string>", "w": "<[int64]>"}]


@pytest.mark.parametrize("target", ["super", "csup-async"])
def test_scan_prints_type_values_as_super_does(tmp_path, capsys, target):
    p = tmp_path / "types.csup"
    csup_async.write(str(p), TYPES, target=target)
    assert main(["scan", str(p), "--format", "json"]) == 0
    assert [json.loads(x) for x in capsys.readouterr().out.splitlines()] == TYPES_WANT
    assert main(["scan", str(p), "--format", "csv"]) == 0
    assert list(csv.DictReader(io.StringIO(capsys.readouterr().out))) == TYPES_WANT
    exe = realtools.find(realtools.SUPER_MAIN, "super") if target == "super" else None
    if exe is not None:
        r = subprocess.run([str(exe), "-j", str(p)], capture_output=True, text=True,
                           timeout=60, check=True)
        assert [json.loads(x) for x in r.stdout.splitlines()] == TYPES_WANT
