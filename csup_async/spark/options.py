"""Spark options (strings, case-insensitive) turned into typed settings, once.

Spark lower-cases option names and gives every value as a string, so the
parsing and validation happen here, on the driver, before any worker sees
them: a typo fails the query at planning time with the accepted names listed,
not in a task.  Settings hold credentials, so their ``repr`` hides them; Spark
may print readers and partitions in plans and errors.

Option names are camelCase on purpose: Spark's redaction
(``spark.redaction.regex``: secret, password, token, access key) then hides
``secretAccessKey``, ``sessionToken`` and ``accessKeyId`` wherever Spark shows
options.  snake_case aliases are accepted too.

Credentials an executor can find itself are never options: each executor's
store resolves AWS's chain or Google's Application Default Credentials
(``GOOGLE_APPLICATION_CREDENTIALS``, the metadata server) on its own, so no
token crosses a pickle; only secrets a user passes as options travel, hidden.
"""

from __future__ import annotations

import difflib
import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from planner.request import ScanRequest

from ..model.errors import ArgumentError, ConfigError, CsupError
from ..model.options import (
    CALIBRATE_BY_DEFAULT,
    DEFAULT_CONCURRENCY,
    DEFAULT_FILE_CONCURRENCY,
)
from ..stores.config import all_names, known_option

MiB = 1 << 20
#: files above which tasks plan their own files (bench/results/spark.md: the crossover)
PLAN_ON_EXECUTORS_THRESHOLD = 500

# Store options are the one vocabulary of csup_async.stores.config (its names and
# aliases, any case, "_" or "-" ignored); values stay text until a path's scheme says
# which store's configuration parses them.
#: option names whose values are never shown (normalised: lower case, no "_" or "-")
_SECRET_NAMES = frozenset({
    "accesskeyid", "key", "accesskey", "awsaccesskeyid", "awsaccesskey",
    "secretaccesskey", "secret", "secretkey", "awssecretaccesskey", "awssecretkey",
    "sessiontoken", "token", "awssessiontoken", "awstoken", "googleoauthtoken",
    "accesstoken", "oauthtoken", "headers", "httpheaders", "storageoptions", "config"})

# option (lower case) -> (Settings attribute, parser)
_READ_OPTIONS: dict[str, tuple[str, str]] = {
    "profile": ("profile", "str"),
    "concurrency": ("concurrency", "int"),
    "fileconcurrency": ("file_concurrency", "int"),
    "targetpartitionbytes": ("target_partition_bytes", "int"),
    "minpartitions": ("min_partitions", "int"),
    "batchrows": ("batch_rows", "int"),
    "shiptailbytes": ("ship_tail_bytes", "int"),
    "planonexecutorsthreshold": ("plan_on_executors_threshold", "int"),
    "pushdown": ("pushdown", "bool"),
    "verifychecksums": ("verify_checksums", "bool"),
    "calibrate": ("calibrate", "bool"),
    "planreport": ("plan_report", "str"),
    # a budget for the whole query, checked on the driver against every task's plan
    "maxrequests": ("max_requests", "int"),
    "maxbytes": ("max_bytes", "int"),
    # Hive-style key=value directories (planner.partitions): "hive" (default) or "none"
    "partitioning": ("partitioning", "str"),
    "basepath": ("base_path", "str"),
    # Zed lake pools (csup_async.spark.lake): the path is the lake's root
    "pool": ("pool", "str"),
    "at": ("pool_at", "str"),
    "where": ("pool_where", "str"),
}
_WRITE_OPTIONS: dict[str, tuple[str, str]] = {
    "segmentthresh": ("segment_thresh", "int"),
    "skewthresh": ("skew_thresh", "int"),
    "compress": ("compress", "bool"),
    "partitionby": ("partition_by", "columns"),
    # the tool the files are for (csup_async.targets): csup-async, super, super-0.3, zed-1.12
    "target": ("target", "str"),
}
_PATH_OPTIONS = frozenset({"path", "paths"})
#: the read verbs' arguments among the options (Settings attribute -> option name):
#: parsed into one ``planner.request.ScanRequest`` (``Settings.request``), as a verb's
_VERB_OPTIONS = {"batch_rows": "batch_rows", "max_requests": "maxRequests",
                 "max_bytes": "maxBytes"}


def _norm(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


def _parse(name: str, kind: str, raw: Any) -> Any:
    if not isinstance(raw, str):
        return raw
    try:
        if kind == "int":
            return int(raw.replace("_", ""))
        if kind == "float":
            return float(raw)
        if kind == "json":
            return json.loads(raw)
        if kind == "columns":  # "a,b" or a JSON list (what DataFrameWriter.partitionBy sends)
            names = json.loads(raw) if raw.lstrip().startswith("[") else raw.split(",")
            return [n.strip() for n in names if n.strip()]
    except ValueError:
        raise CsupError(f"option {name!r} must be {'JSON' if kind == 'json' else 'a number'}"
                        ) from None
    if kind == "bool":
        low = raw.strip().lower()
        if low in ("true", "1", "yes"):
            return True
        if low in ("false", "0", "no"):
            return False
        raise CsupError(f"option {name!r} must be true or false, not {raw!r}")
    return raw


@dataclass
class Settings:
    """Everything a read or a write needs besides the schema; small and picklable."""

    paths: list[str] = field(default_factory=list)
    store: dict[str, Any] = field(default_factory=dict)
    profile: str | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    file_concurrency: int = DEFAULT_FILE_CONCURRENCY
    target_partition_bytes: int = 128 * MiB
    min_partitions: int = field(default_factory=lambda: os.cpu_count() or 1)
    ship_tail_bytes: int = 32 * MiB
    #: more files than this (after partition pruning): tasks open and plan their own files
    #: (spark.scaleout); measured in bench/bench_spark_scale.py
    plan_on_executors_threshold: int = PLAN_ON_EXECUTORS_THRESHOLD
    pushdown: bool = False  # see filters.py: PySpark 4.3 reuses a pruned plan
    verify_checksums: bool = True  # segments' crc32 checked on the executors
    calibrate: bool = CALIBRATE_BY_DEFAULT  # plan with the profile measured on the endpoint
    plan_report: str | None = None
    #: the read verbs' options (``batchRows``, and the query's budget ``maxRequests``/
    #: ``maxBytes``: all tasks together, checked on the driver), parsed once on the driver
    #: as a verb's arguments are; what the driver derives each query's request from
    request: ScanRequest = field(default_factory=ScanRequest)
    segment_thresh: int | None = None
    skew_thresh: int | None = None
    compress: bool | None = None
    target: str | None = None  # write: csup_async.targets name (None: the default)
    pool: str | None = None  # "logs@main": read a Zed lake pool (csup_async.spark.lake)
    pool_at: str | None = None  # a branch journal ID or a commit ID
    pool_where: str | None = None  # filters in the --where grammar, ";"-separated, ANDed
    partitioning: str | None = "hive"  # key=value directories become columns (None: off)
    base_path: str | None = None  # the root of those directories (default: each path)
    partition_by: list[str] = field(default_factory=list)  # write: key=value directories

    def __repr__(self) -> str:
        shown = {k: ("<hidden>" if _norm(k) in _SECRET_NAMES else v)
                 for k, v in self.store.items()}
        return (f"Settings(paths={len(self.paths)}, store={shown}, profile={self.profile!r}, "
                f"target_partition_bytes={self.target_partition_bytes})")

    @property
    def batch_rows(self) -> int:
        return self.request.batch_rows

    @property
    def max_requests(self) -> int | None:
        return self.request.budget.max_requests

    @property
    def max_bytes(self) -> int | None:
        return self.request.budget.max_bytes

    def reader_options(self) -> dict[str, Any]:
        """Options for ``reader_from_meta`` / ``open_dataset`` besides the store's."""
        out: dict[str, Any] = {"concurrency": self.concurrency}
        if not self.verify_checksums:
            out["verify_checksums"] = False
        if self.calibrate:
            out["calibrate"] = True
        if self.profile:
            out["profile"] = self.profile
        return out

    def writer_options(self) -> dict[str, Any]:
        out = {"segment_thresh": self.segment_thresh, "skew_thresh": self.skew_thresh,
               "compress": self.compress, "target": self.target}
        return {k: v for k, v in out.items() if v is not None}

    def store_options(self, url: str) -> dict[str, Any]:
        """The store options for ``url``'s scheme, by their canonical names (as
        ``open`` takes them); an option that does not apply is an error."""
        from ..stores.config import config_kind, given, parse_config

        scheme = url.split("://", 1)[0].lower() if "://" in url else ""
        kind = config_kind(scheme)
        if kind is not None:
            return given(parse_config(kind, self.store, what=f"{scheme}:// paths"))
        opts = {k: v for k, v in self.store.items() if _norm(k) != "storageoptions"}
        if opts or (scheme in ("", "file") and self.store):
            names = ", ".join(sorted(opts or self.store))
            raise ConfigError(f"option{'s' if len(opts) > 1 else ''} {names} do not apply to "
                              f"{scheme or 'local'} paths")
        so = next((v for k, v in self.store.items() if _norm(k) == "storageoptions"), None)
        return {} if so is None else {"storage_options": _parse("storageOptions", "json", so)}


def parse_options(options: Mapping[str, Any], *, write: bool = False) -> Settings:
    """Settings from Spark's options; unknown names are refused with the accepted ones."""
    s = Settings()
    own = _WRITE_OPTIONS if write else _READ_OPTIONS
    verb: dict[str, Any] = {}
    for raw_name, raw in options.items():
        name = _norm(raw_name)
        if name == "path":
            s.paths = [raw]
        elif name == "paths":
            s.paths = list(json.loads(raw)) if isinstance(raw, str) else list(raw)
        elif name in own:
            attr, kind = own[name]
            if attr in _VERB_OPTIONS:
                verb[attr] = _parse(raw_name, kind, raw)
            else:
                setattr(s, attr, _parse(raw_name, kind, raw))
        elif known_option(raw_name):
            s.store[raw_name] = raw
        else:
            accepted = sorted(all_names()) + sorted(own)
            near = difflib.get_close_matches(name, [_norm(a) for a in accepted], n=1)
            hint = ""
            if near:
                hint = f" (did you mean {next(a for a in accepted if _norm(a) == near[0])!r}?)"
            raise ConfigError(f"unknown option {raw_name!r} for format csup{hint}; accepted "
                              f"(any case, '_' ignored): {', '.join(accepted)}")
    for attr in ("concurrency", "file_concurrency", "target_partition_bytes",
                 "min_partitions"):
        if getattr(s, attr) < 1:
            raise CsupError(f"option {attr} must be at least 1")
    s.request = _verb_request(verb)
    if s.ship_tail_bytes < 0:
        raise CsupError("option shipTailBytes must be >= 0")
    if s.plan_on_executors_threshold < 0:
        raise CsupError("option planOnExecutorsThreshold must be >= 0")
    if not write:
        from ..scan.partitioning import check_partitioning

        s.partitioning = check_partitioning(s.partitioning)
    if s.profile is not None:
        import planner as P

        P.get_profile(s.profile)  # refuses an unknown profile now, on the driver
    if s.target is not None:
        from ..writers.targets import resolve

        resolve(s.target)  # an unknown target is refused on the driver, naming the accepted
    return s


def _verb_request(given: dict[str, Any]) -> ScanRequest:
    """The verbs' options as a request, checked where a verb's arguments are
    (``ScanRequest.parse``), refused in the options' words."""
    try:
        return ScanRequest.parse(**given)
    except ArgumentError as e:
        attr = next((a for a in _VERB_OPTIONS if e.message.startswith(a)), "batch_rows")
        if attr == "batch_rows":
            raise CsupError("option batch_rows must be at least 1") from None
        raise CsupError(f"option {_VERB_OPTIONS[attr]} must be >= 0") from None
