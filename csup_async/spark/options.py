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

import json
import os
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import CsupError

MiB = 1 << 20
#: files above which tasks plan their own files (bench/results/spark.md: the crossover)
PLAN_ON_EXECUTORS_THRESHOLD = 500

# option (lower case) -> (store keyword, parser); "endpoint" depends on the scheme
_STORE_OPTIONS: dict[str, tuple[str, str]] = {
    "endpoint": ("endpoint", "str"),
    "region": ("region", "str"),
    "accesskeyid": ("access_key_id", "str"),
    "secretaccesskey": ("secret_access_key", "str"),
    "sessiontoken": ("session_token", "str"),
    "awsprofile": ("aws_profile", "str"),
    "anonymous": ("anonymous", "bool"),
    "adc": ("adc", "bool"),
    "requestpayer": ("request_payer", "bool"),
    "pathstyle": ("path_style", "bool"),
    "token": ("token", "str"),
    "headers": ("headers", "json"),
    "storageoptions": ("storage_options", "json"),
    "connections": ("limit", "int"),
    "connecttimeout": ("connect_timeout", "float"),
    "readtimeout": ("read_timeout", "float"),
    "verifyssl": ("verify_ssl", "bool"),
}
_SECRET_KEYWORDS = frozenset({"secret_access_key", "session_token", "token", "headers",
                              "storage_options", "access_key_id"})

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
    "planreport": ("plan_report", "str"),
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
}
_PATH_OPTIONS = frozenset({"path", "paths"})


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
    concurrency: int = 16
    file_concurrency: int = 64
    target_partition_bytes: int = 128 * MiB
    min_partitions: int = field(default_factory=lambda: os.cpu_count() or 1)
    batch_rows: int = 65536
    ship_tail_bytes: int = 32 * MiB
    #: more files than this (after partition pruning): tasks open and plan their own files
    #: (spark.scaleout); measured in bench/bench_spark_scale.py
    plan_on_executors_threshold: int = PLAN_ON_EXECUTORS_THRESHOLD
    pushdown: bool = False  # see filters.py: PySpark 4.3 reuses a pruned plan
    verify_checksums: bool = True  # segments' crc32 checked on the executors
    plan_report: str | None = None
    segment_thresh: int | None = None
    skew_thresh: int | None = None
    compress: bool | None = None
    pool: str | None = None  # "logs@main": read a Zed lake pool (csup_async.spark.lake)
    pool_at: str | None = None  # a branch journal ID or a commit ID
    pool_where: str | None = None  # filters in the --where grammar, ";"-separated, ANDed
    partitioning: str | None = "hive"  # key=value directories become columns (None: off)
    base_path: str | None = None  # the root of those directories (default: each path)
    partition_by: list[str] = field(default_factory=list)  # write: key=value directories

    def __repr__(self) -> str:
        shown = {k: ("<hidden>" if k in _SECRET_KEYWORDS else v) for k, v in self.store.items()}
        return (f"Settings(paths={len(self.paths)}, store={shown}, profile={self.profile!r}, "
                f"target_partition_bytes={self.target_partition_bytes})")

    def reader_options(self) -> dict[str, Any]:
        """Options for ``reader_from_meta`` / ``open_dataset`` besides the store's."""
        out: dict[str, Any] = {"concurrency": self.concurrency}
        if not self.verify_checksums:
            out["verify_checksums"] = False
        if self.profile:
            out["profile"] = self.profile
        return out

    def writer_options(self) -> dict[str, Any]:
        out = {"segment_thresh": self.segment_thresh, "skew_thresh": self.skew_thresh,
               "compress": self.compress}
        return {k: v for k, v in out.items() if v is not None}

    def store_options(self, url: str) -> dict[str, Any]:
        """The store keywords for ``url``'s scheme; an option that does not apply is an error."""
        from ..stores.resolve import store_class
        from ..stores.resolve import store_options as accepted_by

        scheme = url.split("://", 1)[0].lower() if "://" in url else ""
        opts = dict(self.store)
        if "endpoint" in opts and scheme in ("s3", "s3a"):
            opts["endpoint_url"] = opts.pop("endpoint")
        cls = store_class(scheme)
        accepted = set(accepted_by(cls))
        unknown = sorted(set(opts) - accepted)
        if unknown:
            names = {v[0]: k for k, v in _STORE_OPTIONS.items()} | {"endpoint_url": "endpoint"}
            raise CsupError(f"option{'s' if len(unknown) > 1 else ''} "
                            f"{', '.join(names.get(u, u) for u in unknown)} do not apply to "
                            f"{scheme or 'local'} paths")
        return opts


def parse_options(options: Mapping[str, Any], *, write: bool = False) -> Settings:
    """Settings from Spark's options; unknown names are refused with the accepted ones."""
    s = Settings()
    own = _WRITE_OPTIONS if write else _READ_OPTIONS
    for raw_name, raw in options.items():
        name = _norm(raw_name)
        if name == "path":
            s.paths = [raw]
        elif name == "paths":
            s.paths = list(json.loads(raw)) if isinstance(raw, str) else list(raw)
        elif name in _STORE_OPTIONS:
            kw, kind = _STORE_OPTIONS[name]
            s.store[kw] = _parse(raw_name, kind, raw)
        elif name in own:
            attr, kind = own[name]
            setattr(s, attr, _parse(raw_name, kind, raw))
        else:
            accepted = sorted(_STORE_OPTIONS) + sorted(own)
            raise CsupError(f"unknown option {raw_name!r} for format csup; accepted "
                            f"(case-insensitive): {', '.join(accepted)}")
    for attr in ("concurrency", "file_concurrency", "target_partition_bytes",
                 "min_partitions", "batch_rows"):
        if getattr(s, attr) < 1:
            raise CsupError(f"option {attr} must be at least 1")
    if s.ship_tail_bytes < 0:
        raise CsupError("option shipTailBytes must be >= 0")
    if s.plan_on_executors_threshold < 0:
        raise CsupError("option planOnExecutorsThreshold must be >= 0")
    if not write:
        from ..partitioning import check_partitioning

        s.partitioning = check_partitioning(s.partitioning)
    if s.profile is not None:
        import planner as P

        P.get_profile(s.profile)  # refuses an unknown profile now, on the driver
    return s
