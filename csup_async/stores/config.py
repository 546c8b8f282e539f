"""One option vocabulary for every store, whichever way the options arrive.

Python keywords (``open(url, region=...)``), ``storage_options={...}`` (the
pandas/polars/fsspec habit), the CLI's flags and Spark's string options all go
through :func:`parse_config`, which turns them into one typed, frozen
configuration per store kind (:class:`S3Config`, :class:`GCSConfig`,
:class:`HTTPConfig`, with a :class:`RetryConfig`), the way obstore types its
configuration.  The names people already have are accepted as aliases: s3fs's
``key``/``secret``/``token``/``anon``/``client_kwargs.endpoint_url``,
object_store's and polars' ``aws_access_key_id``/``aws_endpoint_url``/
``aws_region``, Spark's camelCase.  Names match whatever their case and their
``_``/``-`` (Spark lower-cases option names), so ``accessKeyId``,
``access-key-id`` and ``ACCESS_KEY_ID`` are one name.  The endpoint is spelled
``endpoint`` everywhere.

An unknown name is a :class:`~csup_async.model.errors.ConfigError` that names it and
suggests the nearest accepted one; a value of the wrong type names the option
and the type it got, never the value (it may be a secret).  The configurations'
``repr`` hides credentials.
"""

from __future__ import annotations

import dataclasses
import difflib
import json
import math
import os
import warnings
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from ..model.errors import ConfigError
from .retry import DEFAULT_RETRY, RetryPolicy

__all__ = ["GCSConfig", "HTTPConfig", "RetryConfig", "S3Config", "StoreConfig",
           "aliases_of", "all_names", "config_kind", "given", "known_option", "parse_config",
           "store_keywords"]

_HIDDEN = "<hidden>"


@dataclass(frozen=True, slots=True)
class RetryConfig:
    """How hard a store tries: ``max_retries`` retries after the first try, none
    started after ``retry_timeout`` seconds, sleeping up to ``init_backoff * 2**n``
    (at most ``max_backoff``) seconds between them, with full jitter."""

    max_retries: int = DEFAULT_RETRY.attempts - 1
    init_backoff: float = DEFAULT_RETRY.base_delay
    max_backoff: float = DEFAULT_RETRY.max_delay
    retry_timeout: float = DEFAULT_RETRY.total_timeout

    def __post_init__(self) -> None:
        _check_number(self.max_retries, "retry.max_retries", int, 0)
        _check_number(self.init_backoff, "retry.init_backoff", float, 0)
        _check_number(self.max_backoff, "retry.max_backoff", float, 0)
        _check_number(self.retry_timeout, "retry.retry_timeout", float, 0, positive=True)

    def policy(self) -> RetryPolicy:
        """The store's retry policy for this configuration."""
        return RetryPolicy(attempts=self.max_retries + 1, base_delay=self.init_backoff,
                           max_delay=self.max_backoff, total_timeout=self.retry_timeout)

    @classmethod
    def of_policy(cls, policy: RetryPolicy) -> RetryConfig:
        return cls(policy.attempts - 1, policy.base_delay, policy.max_delay,
                   policy.total_timeout)


@dataclass(frozen=True)
class _Client:
    """What every networked store takes: connections, timeouts, TLS, retries."""

    max_connections: int = 64
    connect_timeout: float = 10.0
    read_timeout: float = 30.0
    #: seconds a whole store operation may take (None: no bound beyond the others)
    timeout: float | None = None
    verify_ssl: bool = True
    retry: RetryConfig = field(default_factory=RetryConfig)
    #: use the HTTP(S)_PROXY environment variables
    trust_env: bool = False
    #: a transfer slower than this (bytes/s) after its first seconds is retried
    min_throughput: float | None = None
    chunk_size: int | None = None

    def __post_init__(self) -> None:
        _check_number(self.max_connections, "max_connections", int, 1)
        _check_number(self.connect_timeout, "connect_timeout", float, 0, positive=True)
        _check_number(self.read_timeout, "read_timeout", float, 0, positive=True)
        if self.timeout is not None:
            _check_number(self.timeout, "timeout", float, 0, positive=True)
        if self.min_throughput is not None:
            _check_number(self.min_throughput, "min_throughput", float, 0)
        if self.chunk_size is not None:
            _check_number(self.chunk_size, "chunk_size", int, 1)

    def __repr__(self) -> str:
        parts = []
        for f in dataclasses.fields(self):
            value = getattr(self, f.name)
            if value == f.default or (f.name == "retry" and value == RetryConfig()):
                continue
            shown = _HIDDEN if f.name in _SECRETS else repr(value)
            parts.append(f"{f.name}={shown}")
        return f"{type(self).__name__}({', '.join(parts)})"

    def _client_keywords(self) -> dict[str, Any]:
        out: dict[str, Any] = {
            "limit": self.max_connections, "connect_timeout": self.connect_timeout,
            "read_timeout": self.read_timeout, "timeout": self.timeout,
            "verify_ssl": self.verify_ssl, "retry": self.retry.policy(),
            "trust_env": self.trust_env}
        if self.min_throughput is not None:
            out["min_throughput"] = self.min_throughput
        if self.chunk_size is not None:
            out["chunk_size"] = self.chunk_size
        return out


@dataclass(frozen=True, repr=False)
class S3Config(_Client):
    """An S3 (or S3-compatible) store.  Unset credentials come from botocore's chain
    (``AWS_*`` variables, ``~/.aws``, instance roles); an unset endpoint from
    ``AWS_ENDPOINT_URL_S3``/``AWS_ENDPOINT_URL``."""

    endpoint: str | None = None
    region: str | None = None
    access_key_id: str | None = None
    secret_access_key: str | None = None
    session_token: str | None = None
    #: a profile of ~/.aws (``profile`` alone is the planner's profile in ``open``;
    #: s3fs' ``storage_options={"profile": ...}`` is this one)
    aws_profile: str | None = None
    anonymous: bool = False
    #: path-style URLs (default: with a custom endpoint)
    path_style: bool | None = None
    request_payer: bool = False
    #: object_store's and polars' switch for http:// endpoints: they are allowed here
    #: unless this is False (then an http:// endpoint is a ConfigError)
    allow_http: bool | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_http(self.allow_http, self.endpoint)

    def store_keywords(self) -> dict[str, Any]:
        """The S3Store constructor's keywords."""
        return {**self._client_keywords(), "endpoint_url": self.endpoint, "region": self.region,
                "access_key_id": self.access_key_id,
                "secret_access_key": self.secret_access_key,
                "session_token": self.session_token, "aws_profile": self.aws_profile,
                "anonymous": self.anonymous, "path_style": self.path_style,
                "request_payer": self.request_payer}


@dataclass(frozen=True, repr=False)
class GCSConfig(_Client):
    """A Google Cloud Storage store (JSON API).  Without ``token`` or ``anonymous``,
    ``GOOGLE_OAUTH_ACCESS_TOKEN``, then Application Default Credentials (``adc``:
    None tries them for https:// endpoints only); ``STORAGE_EMULATOR_HOST`` is the
    endpoint when none is given."""

    endpoint: str | None = None
    #: an OAuth2 access token, or a function returning one
    token: str | Callable[[], Any] | None = None
    anonymous: bool = False
    adc: bool | None = None
    #: a service account's JSON key file (object_store's and polars'
    #: ``google_service_account``): its tokens, instead of the default credentials
    service_account: str | None = None
    #: the same key as JSON text (``google_service_account_key``)
    service_account_key: str | None = None
    #: as for S3: False makes an http:// endpoint a ConfigError
    allow_http: bool | None = None

    def __post_init__(self) -> None:
        super().__post_init__()
        _check_http(self.allow_http, self.endpoint)
        if self.service_account is not None and self.service_account_key is not None:
            raise ConfigError("give service_account (a key file) or service_account_key "
                              "(its JSON), not both")

    def store_keywords(self) -> dict[str, Any]:
        """The GCSStore constructor's keywords."""
        out = {**self._client_keywords(), "endpoint": self.endpoint, "token": self.token,
               "anonymous": self.anonymous, "adc": self.adc}
        if self.service_account is not None:
            out["service_account"] = self.service_account
        if self.service_account_key is not None:
            out["service_account_key"] = self.service_account_key
        return out


@dataclass(frozen=True, repr=False)
class HTTPConfig(_Client):
    """An HTTP(S) server answering range requests; ``headers`` go with every request
    (an ``Authorization`` header, say: hidden in the repr)."""

    headers: Mapping[str, str] | None = None

    def store_keywords(self) -> dict[str, Any]:
        """The HTTPStore constructor's keywords."""
        return {**self._client_keywords(), "headers": self.headers}


def _check_http(allow_http: bool | None, endpoint: str | None) -> None:
    if allow_http is False and endpoint is not None and endpoint.lower().startswith("http://"):
        raise ConfigError("the endpoint is http:// but allow_http is false: use an https:// "
                          "endpoint, or allow_http=True")


StoreConfig = S3Config | GCSConfig | HTTPConfig
_CLASSES: dict[str, type[Any]] = {"s3": S3Config, "gcs": GCSConfig, "http": HTTPConfig}
_SECRETS = frozenset({"access_key_id", "secret_access_key", "session_token", "token",
                      "headers", "service_account_key"})

# ------------------------------------------------------------------ the names ---


def _norm(name: str) -> str:
    return name.replace("_", "").replace("-", "").lower()


#: field -> aliases every kind shares (normalised by _norm when looked up)
_CLIENT_ALIASES: dict[str, tuple[str, ...]] = {
    "max_connections": ("connections", "max_pool_connections", "pool_max_idle_per_host"),
    "connect_timeout": (),
    "read_timeout": (),
    "timeout": ("request_timeout",),
    "verify_ssl": ("verify", "client_kwargs.verify", "ssl_verify"),
    "retry": ("retry_config",),
    "trust_env": (),
    "min_throughput": (),
    "chunk_size": (),
}
_ALIASES: dict[str, dict[str, tuple[str, ...]]] = {
    "s3": {
        "endpoint": ("endpoint_url", "aws_endpoint", "aws_endpoint_url", "aws_endpoint_url_s3",
                     "client_kwargs.endpoint_url", "s3_endpoint"),
        "region": ("aws_region", "region_name", "aws_default_region",
                   "client_kwargs.region_name"),
        "access_key_id": ("key", "access_key", "aws_access_key_id", "aws_access_key",
                          "client_kwargs.aws_access_key_id"),
        "secret_access_key": ("secret", "secret_key", "aws_secret_access_key",
                              "aws_secret_key", "client_kwargs.aws_secret_access_key"),
        "session_token": ("token", "aws_session_token", "aws_token",
                          "client_kwargs.aws_session_token"),
        "aws_profile": ("profile", "profile_name"),
        "anonymous": ("anon", "skip_signature", "aws_skip_signature", "unsigned"),
        "path_style": ("force_path_style", "aws_force_path_style"),
        "request_payer": ("requester_pays", "aws_request_payer"),
        "allow_http": ("aws_allow_http",),
    },
    "gcs": {
        "endpoint": ("endpoint_url", "google_endpoint", "gcs_endpoint"),
        "token": ("google_oauth_token", "access_token", "oauth_token"),
        "anonymous": ("anon", "skip_signature", "google_skip_signature"),
        "adc": ("application_default_credentials",),
        "service_account": ("google_service_account", "service_account_path",
                            "google_service_account_path", "google_application_credentials"),
        "service_account_key": ("google_service_account_key",),
        "allow_http": ("google_allow_http",),
    },
    "http": {
        "headers": ("client_kwargs.headers", "http_headers"),
    },
}
#: aliases meaning the opposite of the field they set
_INVERTED = {"allow_invalid_certificates": "verify_ssl",
             "aws_allow_invalid_certificates": "verify_ssl",
             "virtual_hosted_style_request": "path_style",
             "aws_virtual_hosted_style_request": "path_style"}
#: the name a connection count had, which meant rows everywhere else
_DEPRECATED = {"limit": "max_connections"}


def _table(kind: str) -> dict[str, str]:
    """Normalised name -> field, for one kind."""
    out: dict[str, str] = {}
    cls = _CLASSES[kind]
    own = {**_CLIENT_ALIASES, **_ALIASES[kind]}
    for f in dataclasses.fields(cls):
        out[_norm(f.name)] = f.name
        for alias in own.get(f.name, ()):
            out[_norm(alias)] = f.name
    for alias, target in _INVERTED.items():
        if target in out.values():
            out[_norm(alias)] = target
    return out


_TABLES = {kind: _table(kind) for kind in _CLASSES}
_TYPES = {kind: {f.name: str(f.type) for f in dataclasses.fields(cls)}
          for kind, cls in _CLASSES.items()}


def config_kind(scheme: str) -> str | None:
    """"s3", "gcs" or "http" for a URL scheme; None for the others (local, fsspec)."""
    return {"s3": "s3", "s3a": "s3", "gs": "gcs", "gcs": "gcs", "http": "http",
            "https": "http"}.get(scheme.lower())


def known_option(name: str) -> bool:
    """Whether ``name`` is a store option of some kind (Spark sorts its options with this)."""
    n = _norm(name)
    return (n in ("config", "storageoptions") or n in map(_norm, _DEPRECATED)
            or any(n in t for t in _TABLES.values()))


def all_names(kind: str | None = None) -> list[str]:
    """The canonical option names (of one kind, or of all)."""
    kinds = [kind] if kind else list(_CLASSES)
    return sorted({f.name for k in kinds for f in dataclasses.fields(_CLASSES[k])})


def aliases_of(kind: str, name: str) -> tuple[str, ...]:
    """The other names ``name`` is accepted under, for the docs' table."""
    own = {**_CLIENT_ALIASES, **_ALIASES[kind]}
    return own.get(name, ()) + tuple(a for a, t in _INVERTED.items() if t == name
                                     and any(f.name == t for f in
                                             dataclasses.fields(_CLASSES[kind])))


def _unknown(name: str, kind: str, what: str) -> ConfigError:
    names = all_names(kind)
    near = difflib.get_close_matches(name, names + [a for v in _ALIASES[kind].values()
                                                    for a in v if "." not in a], n=1)
    if not near:
        by_norm = {_norm(n): n for n in names}
        hit = difflib.get_close_matches(_norm(name), list(by_norm), n=1)
        near = [by_norm[hit[0]]] if hit else []
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    return ConfigError(f"unknown option {name!r} for {what}{hint}; accepted: "
                       f"{', '.join(names)}")


# ----------------------------------------------------------------- the values ---

_TRUE = ("true", "1", "yes", "on")
_FALSE = ("false", "0", "no", "off")


def _check_number(value: Any, name: str, kind: type, low: float, *,
                  positive: bool = False) -> None:
    ok = (isinstance(value, int) and not isinstance(value, bool)) or (
        kind is float and isinstance(value, float) and not math.isnan(value))
    if not ok:
        raise ConfigError(f"option {name} must be {'an integer' if kind is int else 'a number'}"
                          f", not {type(value).__name__}")
    if value < low or (positive and value <= 0):
        raise ConfigError(f"option {name} must be {'positive' if positive else f'>= {low}'}, "
                          f"not {value}")


def _coerce(name: str, ftype: str, value: Any) -> Any:
    """``value`` as field ``name`` of type ``ftype`` wants it; text (Spark, the
    environment, polars' storage_options) is parsed.  Errors never show the value."""
    if value is None:
        return None
    base = ftype.replace(" | None", "")
    if name == "retry":
        return _retry(value)
    if name in ("token",) and callable(value):
        return value
    if name == "headers":
        if isinstance(value, str):
            try:
                value = json.loads(value)
            except ValueError:
                raise ConfigError("option headers must be a JSON object of header names "
                                  "to values") from None
        if not isinstance(value, Mapping) or not all(
                isinstance(k, str) and isinstance(v, str) for k, v in value.items()):
            raise ConfigError("option headers must be a mapping of header names to values")
        return dict(value)
    if base == "bool":
        if isinstance(value, bool):
            return value
        if isinstance(value, str) and value.strip().lower() in _TRUE + _FALSE:
            return value.strip().lower() in _TRUE
        raise ConfigError(f"option {name} must be true or false, not {type(value).__name__}")
    if base in ("int", "float"):
        if isinstance(value, str):
            try:
                value = int(value.replace("_", "")) if base == "int" else float(value)
            except ValueError:
                raise ConfigError(f"option {name} must be "
                                  f"{'an integer' if base == 'int' else 'a number'}, "
                                  "not text that is not one") from None
        if base == "float" and isinstance(value, int) and not isinstance(value, bool):
            value = float(value)
        return value  # checked by the dataclass
    if base.startswith("str"):
        if not isinstance(value, str):
            extra = " or a function returning one" if name == "token" else ""
            raise ConfigError(f"option {name} must be a string{extra}, "
                              f"not {type(value).__name__}")
        return value
    return value


def _retry(value: Any) -> RetryConfig:
    if isinstance(value, RetryConfig):
        return value
    if isinstance(value, RetryPolicy):
        return RetryConfig.of_policy(value)
    if isinstance(value, str):
        try:
            value = json.loads(value)
        except ValueError:
            raise ConfigError("option retry must be a RetryConfig or a JSON object") from None
    if isinstance(value, Mapping):
        fields = {_norm(f.name): f for f in dataclasses.fields(RetryConfig)}
        kw: dict[str, Any] = {}
        for k, v in value.items():
            f = fields.get(_norm(str(k)))
            if f is None:
                near = difflib.get_close_matches(str(k), [f.name for f in fields.values()], n=1)
                hint = f" (did you mean {near[0]!r}?)" if near else ""
                raise ConfigError(f"unknown option retry.{k}{hint}; accepted: "
                                  f"{', '.join(f.name for f in fields.values())}")
            kw[f.name] = _coerce(f"retry.{f.name}", str(f.type), v)
        return RetryConfig(**kw)
    raise ConfigError(f"option retry must be a RetryConfig, not {type(value).__name__}")


# ------------------------------------------------------------------ parsing ---

def _flatten(options: Mapping[str, Any], prefix: str = "") -> list[tuple[str, Any]]:
    """(name, value) pairs, ``storage_options`` merged in and ``client_kwargs`` dotted."""
    out: list[tuple[str, Any]] = []
    for name, value in options.items():
        if not isinstance(name, str):
            raise ConfigError(f"option names are strings, not {type(name).__name__}")
        n = _norm(name)
        if n == "storageoptions" and not prefix:
            if isinstance(value, str):
                try:
                    value = json.loads(value)
                except ValueError:
                    raise ConfigError("option storage_options must be a JSON object") from None
            if value is None:
                continue
            if not isinstance(value, Mapping):
                raise ConfigError("option storage_options must be a mapping, not "
                                  f"{type(value).__name__}")
            out += _flatten(value)
        elif n == "clientkwargs" and not prefix and isinstance(value, Mapping):
            out += _flatten(value, "client_kwargs.")
        else:
            out.append((prefix + name, value))
    return out


def parse_config(kind: str, options: Mapping[str, Any], *, what: str | None = None
                 ) -> StoreConfig:
    """The configuration of a ``kind`` ("s3", "gcs", "http") store from options in any
    of the accepted spellings; ``config=`` may give a configuration the others override.

    Two spellings of one option given together must agree.
    """
    cls = _CLASSES[kind]
    what = what or {"s3": "s3:// URLs", "gcs": "gs:// URLs", "http": "http(s):// URLs"}[kind]
    table = _TABLES[kind]
    types = _TYPES[kind]
    base: Any = None
    values: dict[str, Any] = {}
    spelled: dict[str, str] = {}
    for name, value in _flatten(options):
        n = _norm(name)
        if n == "config":
            if not isinstance(value, cls):
                raise ConfigError(f"option config must be a {cls.__name__} for {what}, not "
                                  f"{type(value).__name__}")
            base = value
            continue
        if n in _DEPRECATED:
            new = _DEPRECATED[n]
            warnings.warn(f"the {name}= store option is now {new}= (limit= means rows "
                          "everywhere else)", DeprecationWarning, stacklevel=4)
            target: str | None = new
        else:
            target = table.get(n)
        if target is None:
            raise _unknown(name, kind, what)
        if kind == "gcs" and target == "token" and isinstance(value, str) and value in (
                "anon", "google_default", "cloud"):  # gcsfs' names for the credential kinds
            target, value = ("anonymous", True) if value == "anon" else ("adc", True)
        elif kind == "gcs" and target == "token" and isinstance(value, str) and (
                value.endswith(".json") or os.path.isfile(value)):
            raise ConfigError("token is an OAuth2 access token, not a credentials file: "
                              "point GOOGLE_APPLICATION_CREDENTIALS at the file (Application "
                              "Default Credentials) instead")
        elif n in map(_norm, _INVERTED) and value is not None:
            value = not _coerce(target, "bool", value)
        value = _coerce(target, types[target], value)
        if target in values and values[target] != value:
            raise ConfigError(f"options {spelled[target]!r} and {name!r} both set {target}, "
                              "differently")
        values[target], spelled[target] = value, name
    if base is not None:
        return dataclasses.replace(base, **values)  # type: ignore[no-any-return]
    return cls(**values)  # type: ignore[no-any-return]


def given(config: StoreConfig) -> dict[str, Any]:
    """The options of ``config`` that differ from the defaults, by their canonical names
    (what :func:`parse_config` makes ``config`` again from)."""
    out = {}
    for f in dataclasses.fields(config):
        value = getattr(config, f.name)
        default = f.default if f.default is not dataclasses.MISSING else f.default_factory()  # type: ignore[misc]
        if value != default:
            out[f.name] = value
    return out


def store_keywords(kind: str, options: Mapping[str, Any]) -> dict[str, Any]:
    """The store constructor's keywords for options in any accepted spelling."""
    return parse_config(kind, options).store_keywords()
