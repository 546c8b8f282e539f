"""``--help`` explains every subcommand and every option the command line has.

The parser is walked, so a new subcommand or flag added without a help text fails here
rather than showing up in ``csup-async CMD --help`` as a bare name.
"""

from __future__ import annotations

import argparse

import pytest

from csup_async.cli import main
from csup_async.cli.args import build_parser


def _commands(parser: argparse.ArgumentParser, path: tuple[str, ...] = ()
              ) -> list[tuple[tuple[str, ...], argparse.ArgumentParser]]:
    """Every parser in the tree with the words that reach it (() for the top level)."""
    out = [(path, parser)]
    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for name, sub in action.choices.items():
                out += _commands(sub, (*path, name))
    return out


def _missing_help(parser: argparse.ArgumentParser) -> list[str]:
    """'csup-async scan --where'-style names of subcommands and options with no help."""
    missing = []
    for path, p in _commands(parser):
        where = " ".join(("csup-async", *path))
        for action in p._actions:
            if isinstance(action, argparse._SubParsersAction):
                helps = {c.dest: c.help for c in action._choices_actions}
                missing += [f"{where} {name}" for name in action.choices
                            if not helps.get(name)]
            elif not action.help or action.help == argparse.SUPPRESS:
                missing.append(f"{where} {'/'.join(action.option_strings) or action.dest}")
    return missing


def test_every_subcommand_and_option_has_help() -> None:
    assert _missing_help(build_parser()) == []


def test_the_walk_finds_what_lacks_help() -> None:
    """The check above can fail: a parser with a bare option and a bare subcommand."""
    p = argparse.ArgumentParser(prog="csup-async")
    p.add_argument("--fine", help="explained")
    p.add_argument("--bare")
    sub = p.add_subparsers(dest="command")
    s = sub.add_parser("quiet")
    s.add_argument("thing")
    sub.add_parser("told", help="explained").add_argument("--x", help="explained")
    assert _missing_help(p) == ["csup-async --bare", "csup-async quiet",
                                "csup-async quiet thing"]


COMMANDS = [path for path, _ in _commands(build_parser()) if path]


@pytest.mark.parametrize("path", COMMANDS, ids=[" ".join(p) for p in COMMANDS])
def test_help_prints_every_option_with_its_text(
        path: tuple[str, ...], capsys: pytest.CaptureFixture[str]) -> None:
    parser = dict(_commands(build_parser()))[path]
    with pytest.raises(SystemExit) as info:
        main([*path, "--help"])
    assert info.value.code == 0
    out = " ".join(capsys.readouterr().out.split())
    for action in parser._actions:
        if action.option_strings and action.help != argparse.SUPPRESS:
            assert action.option_strings[-1] in out
            assert " ".join(str(action.help).split())[:30].split("%")[0] in out
