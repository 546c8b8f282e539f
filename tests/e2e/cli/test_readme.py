"""Every code example in README.md and docs/*.md runs, and the Quick start is what CI runs.

Each fenced block is one of: ``python`` (run as a script), ``py`` (the Spark example,
run in a local Spark session against moto's S3), ``console`` (a command-line
walkthrough: each ``$`` command run by bash, its output compared), ``sh`` (the README's
Quick start: what CI runs and the demo, checked here), a plain fence (the CLI synopsis
in docs/cli.md, checked against the real argument parser) or ``text`` (the source layout
in docs/architecture.md, checked against the tree) or ``mermaid`` (its import graph, checked
against the code by tests/unit/test_architecture.py).
:func:`test_every_fenced_block_is_accounted_for` fails on any other kind of block or
place, so no example can slip in untested.

A block that cannot run on its own may be preceded by ``<!-- no-run: why -->``; it is
then skipped, and the reason is required (:data:`MAX_NO_RUN` keeps such blocks few).
Identical blocks (the README repeats examples from docs/) run once.
"""

from __future__ import annotations

import json
import os
import re
import shlex
import subprocess
import sys
import unicodedata
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.support.paths import ROOT

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
#: Blocks marked ``<!-- no-run: why -->`` (none today): an example that needs a real
#: cloud account, say. More than this many means examples went untested.
MAX_NO_RUN = 3
SHELL_LANGS = {"sh", "bash", "shell", "zsh", "console", "shell-session"}


@dataclass(frozen=True)
class Block:
    page: str  # path relative to the repository root
    section: str  # the nearest "## " heading above the block
    lang: str
    body: str
    no_run: str | None  # the reason given in a "<!-- no-run: ... -->" comment


_FENCE = re.compile(r"^(## [^\n]*)$|^(?:<!--\s*no-run:?([^\n]*?)-->\n)?```([^\n]*)\n(.*?)^```$",
                    re.S | re.M)


def _page_blocks(path: Path, root: Path = ROOT) -> list[Block]:
    out: list[Block] = []
    section = ""
    page = path.relative_to(root).as_posix()
    for m in _FENCE.finditer(path.read_text()):
        if m.group(1):
            section = m.group(1)[3:].strip()
        else:
            reason = m.group(2)
            out.append(Block(page, section, m.group(3).strip(), m.group(4),
                             None if reason is None else reason.strip()))
    return out


def _blocks() -> list[Block]:
    return [b for p in PAGES for b in _page_blocks(p)]


def _runnable(lang: str) -> list[Block]:
    """Blocks of one language to run, each distinct body once."""
    seen: dict[str, Block] = {}
    for b in _blocks():
        if b.lang == lang and b.no_run is None:
            seen.setdefault(b.body, b)
    return list(seen.values())


def _ids(blocks: list[Block]) -> list[str]:
    return [f"{b.page}:{b.section or 'top'}:{n}" for n, b in enumerate(blocks)]


def _only(lang: str, page: str, section: str | None = None) -> list[Block]:
    return [b for b in _blocks()
            if b.lang == lang and b.page == page and section in (None, b.section)]


def test_every_fenced_block_is_accounted_for() -> None:
    """Every block is of a kind a test below runs, in a place that test reads."""
    places = {
        "python": None,  # test_python_example_runs, any page
        "py": None,  # test_spark_example_runs, any page
        "console": None,  # test_console_example_runs, any page
        "sh": {("README.md", "Quick start")},  # test_quick_start_*, test_demo_command
        "": {("docs/cli.md", "")},  # test_cli_synopsis_matches_the_parser
        "text": {("docs/architecture.md", "Layout")},  # test_layout_names_real_files
        # test_architecture.test_the_documented_import_graph_is_the_codes
        "mermaid": {("docs/architecture.md", "Layers")},
    }
    for b in _blocks():
        assert b.lang in places, (
            f"{b.page} ({b.section}): a ```{b.lang} block no test runs"
            + (" (write shell examples as ```console with $ prompts)"
               if b.lang in SHELL_LANGS else ""))
        allowed = places[b.lang]
        assert allowed is None or (b.page, b.section) in allowed, (
            f"{b.page} ({b.section}): a ```{b.lang} block where no test looks")
    assert len(_runnable("python")) >= 5 and len(_runnable("py")) == 1
    assert len(_runnable("console")) >= 2


def test_no_run_blocks_are_few_and_say_why() -> None:
    marked = [b for b in _blocks() if b.no_run is not None]
    assert len(marked) <= MAX_NO_RUN, [f"{b.page} ({b.section})" for b in marked]
    for b in marked:
        assert len(b.no_run or "") >= 10, f"{b.page} ({b.section}): no-run without a reason"


def test_no_run_marker_is_parsed(tmp_path: Path) -> None:
    page = tmp_path / "page.md"
    page.write_text("## A\n\n<!-- no-run: needs a real bucket -->\n```python\nx = 1\n```\n\n"
                    "```python\ny = 2\n```\n")
    a, b = _page_blocks(page, tmp_path)
    assert (a.no_run, a.body, b.no_run, b.body) == ("needs a real bucket", "x = 1\n", None,
                                                    "y = 2\n")


# ------------------------------------------------------------------ links ---
def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to '-'."""
    text = re.sub(r"[`*_]", "", heading.strip().lower())
    text = "".join(c for c in text if c in " -" or unicodedata.category(c)[0] in "LN")
    return text.replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = re.sub(r"^```.*?^```$", "", path.read_text(), flags=re.S | re.M)
    return {_slug(h) for h in re.findall(r"^#+ (.*)$", text, re.M)}


def test_slug_matches_githubs_rule() -> None:
    assert _slug("Writing: the commit rule") == "writing-the-commit-rule"
    assert _slug("Options (case-insensitive)") == "options-case-insensitive"
    assert _slug("Targets met and missed") == "targets-met-and-missed"


@pytest.mark.parametrize("page", PAGES, ids=[p.relative_to(ROOT).as_posix() for p in PAGES])
def test_links_stay_inside_the_repository_and_resolve(page: Path) -> None:
    """Docs rely only on files in the repository, and every link and anchor exists."""
    text = re.sub(r"^```.*?^```$", "", page.read_text(), flags=re.S | re.M)
    steering_folder = "../" + "share" + "d"  # the folder beside a checkout, never read here
    assert steering_folder not in text and "/work/" not in text
    for target in re.findall(r"\]\(([^)\s]+)\)", text):
        if re.match(r"[a-z]+:", target):
            continue  # an external URL
        file, _, anchor = target.partition("#")
        dest = (page.parent / file).resolve() if file else page
        assert dest.is_relative_to(ROOT.resolve()), f"{page.name}: {target} leaves the repo"
        assert dest.exists(), f"{page.name}: {target} does not exist"
        if anchor and dest.suffix == ".md":
            assert anchor in _anchors(dest), f"{page.name}: no heading for {target}"


def test_index_lists_every_page() -> None:
    index = (ROOT / "docs" / "index.md").read_text()
    readme = (ROOT / "README.md").read_text()
    for page in sorted((ROOT / "docs").glob("*.md")):
        if page.name != "index.md":
            assert f"]({page.name})" in index, f"docs/index.md does not list {page.name}"
            assert f"](docs/{page.name})" in readme, f"README.md does not link {page.name}"


# ------------------------------------------------------------ layout ---
def test_layout_names_real_files() -> None:
    """The layout a newcomer reads first names only files and folders that exist
    (indented names live in the folder above them)."""
    (block,) = _only("text", "docs/architecture.md", "Layout")
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
            assert path.exists(), f"the layout names {path.relative_to(ROOT)}"
            named += 1
    assert named >= 15


# ----------------------------------------------------------------- python ---
@pytest.mark.parametrize("block", _runnable("python"), ids=_ids(_runnable("python")))
def test_python_example_runs(block: Block, tmp_path: Path) -> None:
    env = dict(os.environ, PYTHONPATH=str(ROOT))
    r = subprocess.run([sys.executable, "-c", block.body], cwd=tmp_path, env=env,
                       capture_output=True, text=True, timeout=300)
    assert r.returncode == 0, f"{block.page} ({block.section}):\n{r.stderr[-3000:]}"


# ------------------------------------------------------------ quick start ---
def test_quick_start_has_two_commands_and_ci_runs_the_second() -> None:
    (block,) = _only("sh", "README.md", "Quick start")
    cmds = [c for c in block.body.splitlines() if c.strip()]
    assert len(cmds) == 2
    assert cmds[0].endswith("&& csup-async demo")  # test_demo_command runs the demo
    assert cmds[1] in (ROOT / ".ci" / "run").read_text()
    extras = re.findall(r"\.\[(\w+)\]", " ".join(cmds))
    pyproject = (ROOT / "pyproject.toml").read_text()
    assert extras == ["demo", "test"] and all(f"\n{e} = [" in pyproject for e in extras)


def test_readme_stays_short() -> None:
    assert len((ROOT / "README.md").read_text().splitlines()) <= 250


def test_demo_command(capsys: pytest.CaptureFixture[str]) -> None:
    from csup_async.cli import main

    assert main(["demo", "--rows", "3000"]) == 0
    out = capsys.readouterr().out
    assert "scan plan" in out and "first rows:" in out and "requests" in out
    assert "3,000 rows" in out


# ----------------------------------------------------------- command line ---
def test_cli_synopsis_matches_the_parser(capsys: pytest.CaptureFixture[str]) -> None:
    """The synopsis is a summary, not a script: every command and flag it names exists.
    ``lake ls|scan`` names subcommands of ``lake``; each is checked."""
    from csup_async.cli import main

    (block,) = _only("", "docs/cli.md")
    lines = [ln for ln in block.body.splitlines() if ln.strip()]
    assert len(lines) >= 7
    commands = set()
    for line in lines:
        words = line.split("#")[0].split()
        assert words[0] == "csup-async"
        rest = words[2:]
        subs = [[words[1]]]
        if rest and re.fullmatch(r"[a-z][a-z-]*(\|[a-z][a-z-]*)*", rest[0]):
            subs = [[words[1], s] for s in rest[0].split("|")]
            rest = rest[1:]
        for sub in subs:
            commands.add(sub[0])
            with pytest.raises(SystemExit) as info:
                main([*sub, "--help"])
            assert info.value.code == 0
            usage = capsys.readouterr().out
            for flag in re.findall(r"--[a-z-]+|(?<= )-[a-z]\b", " " + " ".join(rest)):
                assert flag in usage, f"{' '.join(sub)}: {flag} is not a flag"
    from csup_async.cli.args import build_parser

    sub_action = next(a for a in build_parser()._actions if a.choices and a.dest == "command")
    assert commands == set(sub_action.choices), "the synopsis should name every command"


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


@pytest.mark.parametrize("block", _runnable("console"), ids=_ids(_runnable("console")))
def test_console_example_runs(block: Block, tmp_path: Path, moto_s3: Any) -> None:
    """Each ``$`` line runs in bash, in one fresh directory per block, with ``csup-async``
    on PATH; the output (stdout and stderr) must be what the page shows.  A line reading
    ``s3://bucket/`` at ``http://127.0.0.1:9000`` runs against moto, with the files the
    block made under ``events/`` uploaded under the page's names."""
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
    prefix = f"docs-cli-{abs(hash(block.body))}"
    for cmd, expected in steps:
        if "s3://bucket/" in cmd:
            assert "http://127.0.0.1:9000" in cmd
            for f in sorted((work / "events").iterdir()):
                moto_s3.put(f"{prefix}/events/{f.name}", f.read_bytes())
            cmd = (cmd.replace("s3://bucket/", f"s3://{moto_s3.BUCKET}/{prefix}/")
                   .replace("http://127.0.0.1:9000", moto_s3.endpoint))
        r = subprocess.run(["bash", "-c", cmd], cwd=work, env=env, stdout=subprocess.PIPE,
                           stderr=subprocess.STDOUT, text=True, timeout=120)
        assert r.returncode == 0, f"$ {cmd}\n{r.stdout}"
        assert _matches(expected, r.stdout.splitlines()), (
            f"{block.page}: $ {cmd}\nthe page shows:\n" + "\n".join(expected)
            + f"\nit printed:\n{r.stdout}")
    assert len(steps) >= 2


# ------------------------------------------------------------------ spark ---
SPARK_RUN = """
import json
from csup_async.spark.session import local_session
spark = local_session("readme", cores=2)
exec(compile(open({example!r}).read(), "docs (Spark data source)", "exec"))
schema_df = spark.read.format("csup").load({events!r})
out = spark.read.format("csup").load({out!r})
print(json.dumps({{
    "inferred": schema_df.columns,
    "projected": sorted([r.kind, r.amount, r.geo.country] for r in df.collect()),
    "written": sorted([r.kind, r.amount, r.geo.country] for r in out.collect()),
}}))
spark.stop()
"""


@pytest.mark.parametrize("block", _runnable("py"), ids=_ids(_runnable("py")))
def test_spark_example_runs(block: Block, tmp_path: Path, moto_s3: Any) -> None:
    """The Spark block as users read it, with its placeholders (the bucket, the endpoint)
    pointed at moto; the example's first load finds the endpoint in the environment."""
    from csup_async.spark.session import spark_unavailable

    if spark_unavailable() is not None:
        pytest.skip(spark_unavailable() or "")
    import csup_async

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
