"""Which real tool a written file is for: the ``target=`` option of every writer.

``csup_async.write``, ``csup-async convert --target``, ``lake load`` and the Spark
writer take one name from :data:`TARGETS`; each names the CSUP layout and the BSUP
version that target's tool reads:

- ``super`` (the default): CSUP version 23 of ``super`` main (the SuperDB of August
  2026), BSUP 5: a file csup-async writes is a file SuperDB reads.
- ``csup-async``: this library's own trailer layout (CSUP spec, with segment
  statistics, checksums and typed nulls) and BSUP version 0.
- ``super-0.3``: CSUP version 16, the header layout ``super`` v0.3.0 reads, BSUP 2.
- ``zed-1.12``: VNG version 3, the layout Zed's ``zq`` v1.4-v1.12 read, BSUP (ZNG) 0.

What each keeps and loses is in docs/format.md ("Writing for other tools").
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass

from ...model.errors import ArgumentError

__all__ = ["DEFAULT_TARGET", "TARGETS", "Target", "UnknownTargetError", "resolve",
           "v23_writer"]


class UnknownTargetError(ArgumentError):
    """A ``target=`` name that is not one of :data:`TARGETS` (the message lists them)."""


@dataclass(frozen=True)
class Target:
    name: str
    tool: str  # the program that reads what is written for this target
    csup: str  # the columnar layout written
    bsup_version: int  # the BSUP version of BSUP output (and of lake objects)


TARGETS: dict[str, Target] = {t.name: t for t in (
    Target("csup-async", "csup-async", "CSUP trailer layout (version 1)", 0),
    Target("super", "super main (492eab8)", "CSUP version 23", 5),
    Target("super-0.3", "super v0.3.0", "CSUP version 16 (header layout)", 2),
    Target("zed-1.12", "zq v1.12.0 (and v1.4-v1.12)", "VNG version 3", 0),
)}


def v23_writer() -> object | None:
    """The module writing CSUP v23 (``write_values``), or None when this build does not
    have it."""
    for name in ("csup_async.writers.superdb23",):
        try:
            return importlib.import_module(name)
        except ImportError:
            continue
    return None


#: CSUP v23, what super main reads; ``target="csup-async"`` for this library's own layout
#: (segment statistics, checksums, typed nulls: docs/format.md, "Writing for other tools").
DEFAULT_TARGET = "super"


def resolve(name: str | Target | None) -> Target:
    """The :class:`Target` named ``name`` (None: :data:`DEFAULT_TARGET`), or
    UnknownTargetError listing the accepted names."""
    if isinstance(name, Target):
        return name
    if name is None:
        return TARGETS[DEFAULT_TARGET]
    t = TARGETS.get(name) if isinstance(name, str) else None
    if t is None:
        raise UnknownTargetError(f"unknown target {name!r}: use one of "
                                 f"{', '.join(TARGETS)}")
    return t
