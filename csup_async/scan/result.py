"""What a read hands back: the columns in file row order, and what they cost."""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

import planner as P

from .. import arrays as A
from ..arrays import unify as U
from ..model.errors import ArgumentError, ColumnNotFoundError, CsupError, RowSelectionError

#: the union mode of the frames made for analysis (``to_polars``, ``to_pandas``,
#: ``scan_polars``, ``to_duckdb``): polars' and Spark's one type per column, which a
#: user of those expects; ``to_arrow`` and the Arrow capsule stay exact (``"struct"``)
FRAME_UNIONS = "supertype"


@dataclass
class ScanStats:
    """What one scan cost: requests and bytes at the store, and time."""

    requests: int = 0
    bytes_read: int = 0
    bytes_needed: int = 0
    ttfb: float | None = None  # seconds to the first response byte of the scan's first read
    wall: float = 0.0
    metadata_requests: int = 0
    hedges: int = 0  # second copies of late range requests (stores/hedge.py)
    hedge_wins: int = 0  # of those, the ones that answered first

    def __str__(self) -> str:
        ttfb = f"{self.ttfb * 1000:.1f} ms" if self.ttfb is not None else "-"
        reqs = f"{self.requests:,} request" + ("" if self.requests == 1 else "s")
        return (f"{reqs}, {self.bytes_read:,} bytes read for {self.bytes_needed:,} needed "
                f"({self.amplification_text}), first byte {ttfb}, "
                f"wall {self.wall * 1000:.1f} ms")

    def add(self, other: ScanStats) -> None:
        """Count ``other``'s requests and bytes in (its first byte when this has none):
        the cost of several reads as one."""
        self.requests += other.requests
        self.bytes_read += other.bytes_read
        self.bytes_needed += other.bytes_needed
        if self.ttfb is None:
            self.ttfb = other.ttfb

    @property
    def amplification_text(self) -> str:
        """Bytes read per byte needed (``1.05x``); fewer read than needed means the open's
        tail read had already fetched them, which is said instead of a ratio below 1x."""
        if self.bytes_read < self.bytes_needed:
            return ("the tail read held the data" if self.bytes_read == 0
                    else "the tail read held the rest")
        amp = self.bytes_read / self.bytes_needed if self.bytes_needed else 1.0
        return f"{amp:.2f}x read amplification"


@dataclass
class ScanResult:
    """The columns a scan asked for, in file row order."""

    columns: dict[str, A.Array]
    num_rows: int
    stats: ScanStats = field(default_factory=ScanStats)
    plan: Any = None
    total_rows: int | None = None  # a row selection: the rows of the file, seen reading it
    _cache: dict[str, dict[str, A.Array]] = field(default_factory=dict, repr=False,
                                                  compare=False)
    _notes: dict[str, list[str]] = field(default_factory=dict, repr=False, compare=False)
    _last: str = field(default="struct", repr=False, compare=False)

    @property
    def shape(self) -> tuple[int, int]:
        """``(rows, columns)``, as a polars DataFrame's and a pandas one's."""
        return self.num_rows, len(self.columns)

    @property
    def column_names(self) -> list[str]:
        """The columns' paths, in order (pyarrow's name; polars' ``columns``)."""
        return list(self.columns)

    @property
    def schema(self) -> Any:
        """The Arrow schema :meth:`to_arrow` gives (an ``ArrowSchema``: ``pa.schema(s)``,
        ``s.names``, ``s.types``), with no pyarrow needed."""
        from ..arrays.arrowschema import ArrowSchema

        return ArrowSchema(self.unified_columns("struct"))

    def __getitem__(self, path: str | tuple[str, ...]) -> A.Array:
        """``result["user.name"]``: the column at ``path`` (:meth:`column`)."""
        if not isinstance(path, (str, tuple)):
            raise ArgumentError(f"a result is indexed by a column path, not "
                                f"{type(path).__name__} (rows: result.to_pylist()[i])")
        return self.column(path)

    def __contains__(self, path: object) -> bool:
        if not isinstance(path, (str, tuple)):
            return False
        try:
            self.column(path)
        except (ColumnNotFoundError, CsupError):
            return False
        return True

    def column(self, path: str | tuple[str, ...]) -> A.Array:
        """The column at ``path``, in any spelling (``"`a`"`` and ``("a",)`` find ``"a"``)."""
        try:
            return self.columns[P.format_path(path if isinstance(path, tuple)
                                              else P.parse_path(path))]
        except KeyError:
            raise ColumnNotFoundError(f"column {path!r} was not part of this scan") from None

    def to_pylist(self) -> list[dict[str, Any]]:
        """One dict per row keyed by the requested paths (None where null or absent)."""
        cols = {p: a.to_pylist() for p, a in self.columns.items()}
        return [{p: cols[p][i] for p in cols} for i in range(self.num_rows)]

    def to_numpy(self) -> dict[str, Any]:
        return {p: a.to_numpy() for p, a in self.columns.items()}

    def to_arrow(self, unions: str = "struct", fold: bool = True) -> Any:
        """The columns as one pyarrow Table that pandas and polars load: unions of
        several types unified (records by field name, integers widened where exact,
        the rest as ``struct<tag, member...>``; :mod:`csup_async.arrays.unify`), every
        change listed in :attr:`conversions`.  ``unions="dense"`` keeps each union
        that is left as an Arrow dense union instead of the struct form;
        ``fold=False`` keeps every union member exactly as written (``[null]`` beside
        ``[string]``: see :func:`csup_async.arrays.fold_nulls`), as dense unions."""
        pa = A.require("pyarrow", "to_arrow() needs pyarrow: pip install 'csup-async[arrow]'")
        if not fold:
            check_unions(unions)
            return pa.table({p: a.to_arrow(fold=False) for p, a in self.columns.items()})
        cols = self.unified_columns(unions)
        self._last = unions
        return pa.table({p: a.to_arrow(fold=False) for p, a in cols.items()})

    @property
    def conversions(self) -> list[str]:
        """Each change of type the last conversion of this result made (``to_arrow``,
        ``to_polars``, ``to_pandas``; before any, what :meth:`to_arrow` makes): a column
        path, what it was, what it becomes; empty when every column has one type."""
        self.unified_columns(self._last)
        return list(self._notes.get(self._last, []))

    def unified_columns(self, unions: str = "struct") -> dict[str, A.Array]:
        """The columns as :meth:`to_arrow` and the Arrow capsule export them (unions
        unified, see :mod:`csup_async.arrays.unify`), computed once per mode."""
        check_unions(unions)
        if unions not in self._cache:
            notes: list[str] = []
            self._cache[unions] = {p: U.unify(A.fold_nulls(a), p, notes, unions)
                                   for p, a in self.columns.items()}
            self._notes[unions] = notes
        return self._cache[unions]

    def to_pandas(self, unions: str = FRAME_UNIONS) -> Any:
        """A pandas DataFrame (through pyarrow, as pandas itself converts Arrow data).
        A column of several kinds takes polars' and Spark's one type by default
        (``unions="supertype"``: numbers float64, others their text); ``"struct"``
        keeps each member as :meth:`to_arrow` does."""
        for module in ("pandas", "pyarrow"):
            A.require(module, "to_pandas() needs pandas and pyarrow: "
                      "pip install 'csup-async[pandas]'")
        return self.to_arrow(unions).to_pandas()

    def to_polars(self, unions: str = FRAME_UNIONS) -> Any:
        """A polars DataFrame over the Arrow capsule (no pyarrow needed).  A column of
        several kinds takes the one type ``pl.read_ndjson`` gives it by default
        (``unions="supertype"``); ``"struct"`` keeps each member (``to_arrow``'s)."""
        pl = A.require("polars", "to_polars() needs polars: pip install 'csup-async[polars]'")
        check_unions(unions)
        self._last = unions
        return pl.DataFrame(self.exported(unions))

    def exported(self, unions: str = "struct") -> Any:
        """This result as an Arrow C stream with unions unified as ``unions`` says (the
        result itself exports ``"struct"``): what ``to_polars`` and ``scan_polars``
        hand polars."""
        check_unions(unions)
        return self if unions == "struct" else _Exported(self, unions)

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        """The columns as one Arrow record batch, from this result's own buffers
        (``pl.DataFrame(result)``, ``pa.table(result)``, DuckDB's replacement scans):
        the schema and values of :meth:`to_arrow`."""
        from ..arrays.capsule import check_requested, export_batch, stream_of

        check_requested(requested_schema)
        schema, batch = export_batch(self.unified_columns("struct"), self.num_rows)
        return stream_of(schema, [batch])

    def __len__(self) -> int:
        return self.num_rows


def check_unions(unions: Any) -> str:
    """``unions`` when it is a mode of :mod:`csup_async.arrays.unify`, else an
    ArgumentError naming the accepted ones."""
    if unions not in U.UNION_MODES:
        raise ArgumentError(f"unions must be one of {', '.join(map(repr, U.UNION_MODES))} "
                            f"(supertype: polars' and Spark's one type; struct: every member "
                            f"kept; dense: Arrow's dense union), not {unions!r}")
    return str(unions)


class _Exported:
    """A result's columns as an Arrow C stream in one union mode."""

    def __init__(self, result: ScanResult, unions: str) -> None:
        self.result, self.unions = result, unions

    def __arrow_c_stream__(self, requested_schema: Any = None) -> Any:
        from ..arrays.capsule import check_requested, export_batch, stream_of

        check_requested(requested_schema)
        schema, batch = export_batch(self.result.unified_columns(self.unions),
                                     self.result.num_rows)
        return stream_of(schema, [batch])


def rows_of_whole(result: ScanResult, idx: np.ndarray, path: str) -> ScanResult:
    """``take`` of a reader that reads its object whole (BSUP, SuperDB's layout): the rows
    at ``idx`` (int64 row numbers >= 0, as a verb's request checked them) of the whole
    scan, in the order given."""
    n = result.num_rows
    if idx.size and int(idx.max()) >= n:
        bad = int(idx[idx >= n][0])
        raise RowSelectionError(f"row index {bad} is out of range for {n} rows", path=path)
    return ScanResult({c: a.take(idx) for c, a in result.columns.items()}, int(idx.size),
                      result.stats, result.plan)
