"""Every code example in the README runs, and the Quick start is what CI runs.

Each fenced block is one of: ``python`` (run as a script), ``py`` (the Spark
example, run in a local Spark session against moto's S3), ``console`` (the
command-line walkthrough: each ``$`` command run by bash, its output compared),
``sh`` (the Quick start: what CI runs and the demo, checked here) or a plain
fence (the CLI synopsis, checked against the real argument parser).
:func:`test_every_fenced_block_is_accounted_for` fails on a new kind of block,
so no example can slip in untested.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import ROOT

README = (ROOT / "README.md").read_text()


@dataclass(frozen=True)
class Block:
    section: str  # the nearest "## " heading above the block
    lang: str
    body: str


def _blocks() -> list[Block]:
    out: list[Block] = []
    section = ""
    for m in re.finditer(r"^(## [^\n]*)$|^```([^\n]*)\n(.*?)^```$", README, re.S | re.M):
        if m.group(1):
            section = m.group(1)[3:].strip()
        else:
            out.append(Block(section, m.group(2).strip(), m.group(3)))
    return out


def _only(lang: str, section: str | None = None) -> list[Block]:
    return [b for b in _blocks() if b.lang == lang and section in (None, b.section)]


def test_every_fenced_block_is_accounted_for() -> None:
    kinds = {(b.section, b.lang) for b in _blocks()}
    handled = {
        ("Quick start", "sh"),  # test_quick_start_*, test_demo_command
        ("Python API", "python"),  # test_readme_python_example_runs
        ("Filters and row selection", "python"),  # test_readme_python_example_runs
        ("Spark data source", "py"),  # test_readme_spark_example_runs
        ("Command line", ""),  # test_cli_synopsis_matches_the_parser
        ("Command line", "console"),  # test_readme_console_example_runs
        ("Development", "text"),  # test_development_layout_names_real_files
    }
    assert kinds <= handled, f"README blocks no test runs: {kinds - handled}"
    assert len(_only("python")) >= 3 and len(_only("py")) == 1
    assert len(_only("console")) == 1 and len(_only("", "Command line")) == 1


def test_development_layout_names_real_files() -> None:
    """The layout a newcomer reads first names only files and folders that exist
    (indented names live in the folder above them)."""
    (block,) = _only("text", "Development")
    parent = ""
    named = 0
    for line in block.body.splitlines():
        if not line.strip() or line.startswith(" " * 8):
            continue  # a continuation of the description
        indented = line.startswith("  ")
        names = line.strip().split("  ")[0]
        if not indented:
            parent = names if names.endswith("/") else ""
        for name in (n.strip() for n in names.split(",")):
            path = ROOT / (parent + name if indented else name)
            assert path.exists(), f"README's layout names {path.relative_to(ROOT)}"
            named += 1
    assert named >= 15


# ----------------------------------------------------------------- python ---
@pytest.mark.parametrize("index", range(len(_only("python"))))
def test_readme_python_example_runs(index: int, tmp_path: Path) -> None:
    code = _only("python")[index].body
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", code], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, r.stderr[-3000:]


# ------------------------------------------------------------ quick start ---
def test_quick_start_has_two_commands_and_ci_runs_the_second() -> None:
    (block,) = _only("sh", "Quick start")
    cmds = [c for c in block.body.splitlines() if c.strip()]
    assert len(cmds) == 2
    assert cmds[0].endswith("&& csup-async demo")  # test_demo_command runs the demo
    assert cmds[1] in (ROOT / ".ci" / "run").read_text()
    extras = re.findall(r"\.\[(\w+)\]", " ".join(cmds))
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert extras == ["demo", "test"] and all(f"\n{e} = [" in pyproject for e in extras)


def test_demo_command(capsys: pytest.CaptureFixture[str]) -> None:
    from csup_async.cli import main

    assert main(["demo", "--rows", "3000"]) == 0
    out = capsys.readouterr().out
    assert "scan plan" in out and "first rows:" in out and "requests" in out
    assert "3,000 rows" in out


# ----------------------------------------------------------- command line ---
def test_cli_synopsis_matches_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    """The synopsis is a summary, not a script: every command and flag it names exists."""
    from csup_async.cli import main

    (block,) = _only("", "Command line")
    lines = [ln for ln in block.body.splitlines() if ln.strip()]
    assert len(lines) == 6
    for line in lines:
        words = line.split("#")[0].split()
        assert words[0] == "csup-async"
        with pytest.raises(SystemExit) as info:
            main([words[1], "--help"])
        assert info.value.code == 0
        usage = capsys.readouterr().out
        for flag in re.findall(r"--[a-z-]+|(?<= )-[a-z]\b", " ".join(words[2:])):
            assert flag in usage, f"{words[1]}: {flag} is not a flag"


def _matches(expected: list[str], actual: list[str]) -> bool:
    """Doctest-like: a line ``...`` stands for any lines, a line ending in ``...`` for any
    line that starts with the rest."""
    if not expected:
        return not actual
    e = expected[0]
    if e == "...":
        return any(_matches(expected[1:], actual[k:]) for k in range(len(actual) + 1))
    if not actual:
        return False
    ok = actual[0].startswith(e[:-3]) if e.endswith("...") else actual[0] == e
    return ok and _matches(expected[1:], actual[1:])


def test_matches_is_strict_where_it_should_be() -> None:
    assert _matches(["a", "...", "d"], ["a", "b", "c", "d"])
    assert _matches(["x..."], ["xyz"]) and not _matches(["x"], ["x", "y"])
    assert not _matches(["a", "...", "d"], ["a", "b"])


def test_readme_console_example_runs(tmp_path: Path, moto_s3: Any) -> None:
    """Each ``$`` line runs in bash, in one directory, with ``csup-async`` on PATH; the
    output (stdout and stderr) must be what the README shows.  The S3 line runs against
    moto with the files the block made, uploaded under the README's names."""
    (block,) = _only("console")
    steps: list[tuple[str, list[str]]] = []
    for line in block.body.splitlines():
        if line.startswith("$ "):
            steps.append((line[2:], []))
        else:
            steps[-1][1].append(line)
    bindir = tmp_path / "bin"
    bindir.mkdir()
    shim = bindir / "csup-async"  # the console script, from this checkout
    shim.write_text(f"#!/bin/sh\nexec {shlex.quote(sys.executable)} -m csup_async.cli \"$@\"\n")
    shim.chmod(0o755)
    work = tmp_path / "work"
    work.mkdir()
    env = dict(os.environ, PATH=f"{bindir}{os.pathsep}{os.environ['PATH']}",
               PYTHONPATH=str(ROOT), COLUMNS="120", AWS_ACCESS_KEY_ID=moto_s3.ACCESS_KEY,
               AWS_SECRET_ACCESS_KEY=moto_s3.SECRET_KEY, AWS_DEFAULT_REGION="us-east-1")
    prefix = "readme-cli"
    ran_s3 = False
    for cmd, expected in steps:
        if "s3://bucket/" in cmd:
            assert "http://127.0.0.1:9000" in cmd
            for f in sorted((work / "events").iterdir()):
                moto_s3.put(f"{prefix}/events/{f.name}", f.read_bytes())
            cmd = (cmd.replace("s3://bucket/", f"s3://{moto_s3.BUCKET}/{prefix}/")
                   .replace("http://127.0.0.1:9000", moto_s3.endpoint))
            ran_s3 = True
        r = subprocess.run(["bash", "-c", cmd], cwd=work, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
        assert r.returncode == 0, f"$ {cmd}\n{r.stdout}"
        assert _matches(expected, r.stdout.splitlines()), (
            f"$ {cmd}\nREADME shows:\n" + "\n".join(expected) + f"\nit printed:\n{r.stdout}")
    assert ran_s3 and len(steps) >= 8


# ------------------------------------------------------------------ spark ---
SPARK_RUN = """
import json
from csup_async.spark.session import local_session
spark = local_session("readme", cores=2)
exec(compile(open({example!r}).read(), "README.md (Spark data source)", "exec"))
schema_df = spark.read.format("csup").load({events!r})
out = spark.read.format("csup").load({out!r})
print(json.dumps({{
    "inferred": schema_df.columns,
    "projected": sorted([r.kind, r.amount, r.geo.country] for r in df.collect()),
    "written": sorted([r.kind, r.amount, r.geo.country] for r in out.collect()),
}}))
spark.stop()
"""


def test_readme_spark_example_runs(tmp_path: Path, moto_s3: Any) -> None:
    """The Spark block as users read it, with its placeholders (the bucket, the endpoint)
    pointed at moto; the example's first load finds the endpoint in the environment."""
    from csup_async.spark.session import spark_unavailable

    if spark_unavailable() is not None:
        pytest.skip(spark_unavailable() or "")
    import csup_async

    (block,) = _only("py", "Spark data source")
    assert "s3://bucket/" in block.body and "http://127.0.0.1:9000" in block.body
    base = f"s3://{moto_s3.BUCKET}/readme-spark/"
    code = (block.body.replace("s3://bucket/", base)
            .replace("http://127.0.0.1:9000", moto_s3.endpoint))
    rows = [[{"id": 1, "kind": "buy", "amount": 12, "geo": {"country": "de", "city": "b"}},
             {"id": 2, "kind": "view", "amount": None, "geo": {"country": "fr", "city": "p"}}],
            [{"id": 3, "kind": "buy", "amount": 7, "geo": {"country": "de", "city": "m"},
              "extra": True}]]
    for n, part in enumerate(rows):
        path = tmp_path / f"part-{n}.csup"
        csup_async.write(path, part)
        moto_s3.put(f"readme-spark/events/part-{n}.csup", path.read_bytes())
    example = tmp_path / "example.py"
    example.write_text(code)
    script = SPARK_RUN.format(example=str(example), events=base + "events/",
                              out=base + "out/")
    env = dict(os.environ, PYTHONPATH=str(ROOT), AWS_ENDPOINT_URL=moto_s3.endpoint,
               AWS_ACCESS_KEY_ID=moto_s3.ACCESS_KEY, AWS_SECRET_ACCESS_KEY=moto_s3.SECRET_KEY,
               AWS_DEFAULT_REGION="us-east-1")
    r = subprocess.run([sys.executable, "-c", script], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=600)
    assert r.returncode == 0, r.stderr[-4000:]
    got = json.loads(r.stdout.strip().splitlines()[-1])
    want = sorted([x["kind"], x["amount"], x["geo"]["country"]] for p in rows for x in p)
    assert got["inferred"] == ["id", "kind", "amount", "geo", "extra"]
    assert got["projected"] == want and got["written"] == want
