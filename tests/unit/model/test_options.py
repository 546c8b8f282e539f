"""The typed options (csup_async.model.options): each default once, each check naming the
option and the value, one parse of ``open``'s keywords, and docs/api.md's table of them.

Through the public API where a user would see it (``open``, ``open_dataset``,
``Reader``); the parse itself directly, with a hypothesis round trip of keywords to the
typed object and back.
"""

from __future__ import annotations

import ast
import dataclasses
import inspect
import warnings
from pathlib import Path
from typing import Any

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

import csup_async
from csup_async.model import options as O
from csup_async.model.errors import ConfigError, CsupError
from csup_async.model.options import DatasetOptions, OpenOptions, parse_dataset, parse_open

ROOT = Path(__file__).resolve().parents[3]


# ------------------------------------------------------------ defaults ---
def test_each_default_is_defined_once_and_every_face_reads_it() -> None:
    """The reader, the read caps, the sync face, the polars and DuckDB sources, Spark's
    settings and the CLI's batches show the same values, all from model/options.py."""
    from csup_async.cli import batches
    from csup_async.datasets.dataset import Dataset
    from csup_async.datasets.fragment import Fragment
    from csup_async.datasets.opening import open_dataset
    from csup_async.readers.bsup import BsupReader
    from csup_async.readers.superdb import HeaderLayoutReader
    from csup_async.scan import options as scan_options
    from csup_async.spark.options import Settings
    from csup_async.stores import listing
    from csup_async.sync import duckdb_source, facade, polars_source

    for name in ("DEFAULT_CONCURRENCY", "DEFAULT_MAX_METADATA", "DEFAULT_MAX_MEM_LENGTH",
                 "DEFAULT_MAX_ROWS", "DEFAULT_MAX_VALUES"):
        assert getattr(scan_options, name) == getattr(O, name)
    assert listing.DEFAULT_MATCH == O.DEFAULT_MATCH == DatasetOptions().match
    assert batches.BATCH_ROWS == O.DEFAULT_BATCH_ROWS
    s = Settings()
    assert (s.concurrency, s.file_concurrency, s.batch_rows, s.calibrate) == (
        O.DEFAULT_CONCURRENCY, O.DEFAULT_FILE_CONCURRENCY, O.DEFAULT_BATCH_ROWS,
        O.CALIBRATE_BY_DEFAULT)
    verbs = [csup_async.Reader.iter_batches, HeaderLayoutReader.iter_batches,
             BsupReader.iter_batches, Fragment.iter_batches, Dataset.iter_batches,
             facade.SyncReader.iter_batches, duckdb_source.to_duckdb,
             polars_source.scan_polars]
    for verb in verbs:
        assert inspect.signature(verb).parameters["batch_rows"].default == \
            O.DEFAULT_BATCH_ROWS, verb
    assert inspect.signature(Dataset).parameters["file_concurrency"].default == \
        O.DEFAULT_FILE_CONCURRENCY == DatasetOptions().file_concurrency
    assert "options" in inspect.signature(open_dataset).parameters


def test_no_module_restates_a_default() -> None:
    """No function of the package gives ``batch_rows``, ``concurrency``,
    ``file_concurrency`` or ``max_mem_length`` a literal number as its default: a
    second definition would drift (``DEFAULT_MAX_METADATA`` once had two values)."""
    watched = {"batch_rows", "concurrency", "file_concurrency", "max_mem_length",
               "max_metadata"}
    allowed = {("csup_async/lake/objects.py", "concurrency")}  # a lake's own (32), not a read's
    found = []
    for path in sorted((ROOT / "csup_async").rglob("*.py")):
        rel = path.relative_to(ROOT).as_posix()
        for node in ast.walk(ast.parse(path.read_text())):
            if not isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
                continue
            a = node.args
            pairs = list(zip(a.args[len(a.args) - len(a.defaults):], a.defaults, strict=True))
            pairs += [(k, d) for k, d in zip(a.kwonlyargs, a.kw_defaults, strict=True)
                      if d is not None]
            for arg, default in pairs:
                if (arg.arg in watched and isinstance(default, ast.Constant | ast.BinOp)
                        and (rel, arg.arg) not in allowed
                        and not (isinstance(default, ast.Constant) and default.value is None)):
                    found.append(f"{rel}:{node.lineno} {node.name}({arg.arg}=...)")
    assert not found, found


def test_a_reader_made_by_hand_has_the_defaults_of_open(tmp_path: Path) -> None:
    from csup_async.stores import LocalStore

    r = csup_async.Reader(LocalStore(), str(tmp_path / "x.csup"), owns_store=True)
    o = OpenOptions()
    assert r.options == o
    assert (r.concurrency, r.max_metadata, r.max_mem_length, r.max_rows, r.max_values,
            r.timeout, r.verify_checksums, r.trust_counts, r.verify_counts, r.immutable,
            r.calibrate) == (O.DEFAULT_CONCURRENCY, O.DEFAULT_MAX_METADATA,
                             O.DEFAULT_MAX_MEM_LENGTH, None, None, None, True, False,
                             False, False, False)
    assert r.static_profile.name == O.DEFAULT_PROFILE


# ---------------------------------------------------------- validation ---
BAD = [
    ("concurrency", 0, "concurrency must be at least 1, got 0"),
    ("concurrency", -3, "concurrency must be at least 1, got -3"),
    ("concurrency", "8", "concurrency must be an integer, got '8'"),
    ("concurrency", 1.5, "concurrency must be an integer, got 1.5"),
    ("concurrency", True, "concurrency must be an integer, got True"),
    ("timeout", 0, "timeout must be a positive number of seconds, got 0"),
    ("timeout", -1.5, "timeout must be a positive number of seconds, got -1.5"),
    ("timeout", "10", "timeout must be a positive number of seconds, got '10'"),
    ("max_rows", -1, "max_rows must be at least 0, got -1"),
    ("max_values", "many", "max_values must be an integer, got 'many'"),
    ("max_mem_length", None, "max_mem_length must be an integer, got None"),
    ("max_metadata", 2.0, "max_metadata must be an integer, got 2.0"),
]


@pytest.mark.parametrize(("name", "value", "message"), BAD)
def test_a_bad_value_is_a_config_error_naming_the_option_and_the_value(
        name: str, value: Any, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        OpenOptions(**{name: value})
    assert str(e.value) == message


@pytest.mark.parametrize(("name", "value", "message"), BAD[:3] + BAD[5:7])
async def test_open_refuses_a_bad_value_before_any_request(
        tmp_path: Path, name: str, value: Any, message: str) -> None:
    p = tmp_path / "a.csup"
    csup_async.write(p, [{"a": 1}])
    with pytest.raises(CsupError, match=message):
        async with csup_async.open(str(p), **{name: value}):
            pass


async def test_trusting_and_verifying_counts_at_once_is_refused() -> None:
    with pytest.raises(CsupError, match="contradict"):
        OpenOptions(trust_counts=True, verify_counts=True)


def test_numpy_integers_and_floats_are_numbers() -> None:
    np = pytest.importorskip("numpy")
    o = OpenOptions(concurrency=np.int64(4), timeout=np.float64(2.5), max_rows=np.int32(9))
    assert (o.concurrency, o.timeout, o.max_rows) == (4, 2.5, 9)
    assert type(o.concurrency) is int


@pytest.mark.parametrize(("value", "message"), [
    (0, "file_concurrency must be at least 1, got 0"),
    ("x", "file_concurrency must be an integer, got 'x'"),
    (None, "file_concurrency must be an integer, got None"),
])
def test_dataset_options_are_checked(value: Any, message: str) -> None:
    with pytest.raises(ConfigError) as e:
        DatasetOptions(file_concurrency=value)
    assert str(e.value) == message
    assert DatasetOptions(file_concurrency="8").file_concurrency == 8  # the CLI's text


async def test_open_dataset_with_no_file_concurrency_is_an_error_not_a_hang(
        tmp_path: Path) -> None:
    csup_async.write(tmp_path / "a.csup", [{"a": 1}])
    with pytest.raises(ConfigError, match="file_concurrency must be at least 1"):
        async with csup_async.open_dataset(str(tmp_path) + "/", file_concurrency=0):
            pass


def test_an_unknown_reader_keyword_lists_the_valid_names(tmp_path: Path) -> None:
    from csup_async.stores import LocalStore

    with pytest.raises(ConfigError) as e:
        csup_async.Reader(LocalStore(), str(tmp_path / "x"), owns_store=True,
                          concurency=4)
    msg = str(e.value)
    assert "'concurency'" in msg and all(n in msg for n in OpenOptions.names())


async def test_an_unknown_open_keyword_is_the_stores_error_naming_the_nearest(
        tmp_path: Path) -> None:
    """Unknown names go to the store, whose vocabulary is the larger (unchanged)."""
    p = tmp_path / "a.csup"
    csup_async.write(p, [{"a": 1}])
    with pytest.raises(ConfigError, match="concurency"):
        async with csup_async.open(str(p), concurency=4):
            pass


@pytest.mark.parametrize("name", O.ROW_COUNT_HABITS)
def test_another_librarys_row_count_points_to_limit(name: str) -> None:
    with pytest.raises(ConfigError, match="the rows to read are limit="):
        csup_async.open("x.csup", **{name: 5})


@pytest.mark.parametrize("name", O.VERB_ARGUMENTS)
def test_a_verb_argument_given_to_open_says_so(name: str) -> None:
    with pytest.raises(ConfigError, match="an argument of the read verbs"):
        csup_async.open_dataset("x/", **{name: None})


def test_limit_as_connections_warns_at_the_callers_line() -> None:
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        reader, store = parse_open({"limit": 4, "concurrency": 2}, stacklevel=3)
    assert store == {"max_connections": 4} and reader.concurrency == 2
    assert [x.filename for x in w] == [__file__]
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        csup_async.open("x.csup", limit=3)
    assert [(x.category, x.filename) for x in w] == [(DeprecationWarning, __file__)]
    with pytest.raises(CsupError, match="disagree"), pytest.warns(DeprecationWarning):
        parse_open({"limit": 4, "max_connections": 5})


# ----------------------------------------------------- the round trip ---
VALID = {
    "profile": st.sampled_from([None, "local", "s3", "gcs", "http"]),
    "concurrency": st.none() | st.integers(1, 1 << 20),
    "max_metadata": st.integers(1, 1 << 40),
    "max_mem_length": st.integers(0, 1 << 40),
    "max_rows": st.none() | st.integers(0, 1 << 40),
    "max_values": st.none() | st.integers(0, 1 << 40),
    "timeout": st.none() | st.floats(1e-3, 1e6) | st.integers(1, 10_000),
    "metadata_cache": st.sampled_from([None, False, True, "/tmp/cache"]),
    "immutable": st.booleans(),
    "verify_checksums": st.booleans(),
    "trust_counts": st.booleans(),
    "verify_counts": st.just(False),
    "calibrate": st.sampled_from([None, False, True]),
}
STORE = st.dictionaries(st.sampled_from(["endpoint", "region", "max_connections",
                                         "anonymous", "aws_allow_http"]),
                        st.integers(0, 9) | st.text(max_size=5), max_size=3)
DATASET = st.fixed_dictionaries({}, optional={
    "file_concurrency": st.integers(1, 512), "match": st.none() | st.just("*.json"),
    "partitioning": st.sampled_from([None, "hive", "none"]),
    "partition_base": st.none() | st.just("/data")})


@settings(max_examples=200, deadline=None)
@given(reader=st.fixed_dictionaries({}, optional=VALID), store=STORE, own=DATASET)
def test_keywords_to_options_and_back(reader: dict[str, Any], store: dict[str, Any],
                                      own: dict[str, Any]) -> None:
    """Every keyword lands in exactly one place (``timeout`` in both the reader's and
    the store's), keeps its value, and the typed object rebuilds itself; a keyword not
    given is the field's one default."""
    given_ = {**reader, **store}
    opts, rest = parse_open(given_)
    assert rest == {k: v for k, v in given_.items() if k not in O.READER_OPTIONS}
    assert ("timeout" in rest) == ("timeout" in reader)  # the store's too
    for f in dataclasses.fields(OpenOptions):
        assert getattr(opts, f.name) == reader.get(f.name, f.default), f.name
    assert OpenOptions(**dataclasses.asdict(opts)) == opts
    assert OpenOptions(**opts.given()) == opts
    assert OpenOptions.from_kwargs(dict(reader)) == opts
    ds, opts2, rest2 = parse_dataset({**given_, **own})
    assert (opts2, rest2) == (opts, rest)
    assert ds == DatasetOptions(**own)


# ---------------------------------------------------------------- docs ---
def _shown(value: Any) -> str:
    if isinstance(value, int) and not isinstance(value, bool) and value >= 1 << 20 \
            and value % (1 << 20) == 0:
        return f"{value >> 20} MiB"
    return f"`{value!r}`" if isinstance(value, str) else f"`{value}`"


def option_rows() -> list[str]:
    """docs/api.md's table of options, made from the dataclasses' fields."""
    rows = ["| option | default | what it sets |", "|---|---|---|"]
    for cls in (OpenOptions, DatasetOptions):
        for f in dataclasses.fields(cls):
            where = "" if cls is OpenOptions else " (`open_dataset`)"
            rows.append(f"| `{f.name}`{where} | {_shown(f.default)} | {f.metadata['doc']} |")
    return rows


def test_docs_table_of_options_is_the_dataclasses() -> None:
    text = (ROOT / "docs" / "api.md").read_text()
    table = "\n".join(option_rows())
    assert table in text, "docs/api.md's table of options should read:\n" + table
