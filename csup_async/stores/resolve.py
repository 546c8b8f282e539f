"""Pick a store from a URL's scheme, and the key to ask it for.

``s3://``/``s3a://`` → S3Store, ``gs://``/``gcs://`` → GCSStore (keys are
``bucket/object``, so one store serves every bucket), ``http(s)://`` →
HTTPStore (the key is the whole URL), ``file://`` and plain paths →
LocalStore, any other protocol fsspec knows (``memory://``, ``sftp://``, ...)
→ FsspecStore.  Store modules are imported only when a URL needs them:
aiobotocore alone takes a noticeable part of a second to import.
"""

from __future__ import annotations

import difflib
import functools
import importlib
import inspect
from typing import Any
from urllib.parse import urlsplit

from ..model.errors import ConfigError, CsupError
from ..model.redact import redact_url
from .base import Store
from .local import LocalStore

__all__ = ["STORE_CLASSES", "store_class", "store_for", "store_options"]

#: URL scheme -> (module, class) of the store that serves it; any other scheme is fsspec's.
STORE_CLASSES: dict[str, tuple[str, str]] = {
    "": (".local", "LocalStore"), "file": (".local", "LocalStore"),
    "s3": (".s3", "S3Store"), "s3a": (".s3", "S3Store"),
    "gs": (".gcs", "GCSStore"), "gcs": (".gcs", "GCSStore"),
    "http": (".http", "HTTPStore"), "https": (".http", "HTTPStore"),
}
_FSSPEC = (".fsspec_store", "FsspecStore")


def _scheme(url: str) -> str:
    if "://" not in url:
        return ""
    try:
        return urlsplit(url).scheme.lower()
    except ValueError:
        raise CsupError("not a valid URL", path=redact_url(url)) from None


def store_class(scheme: str) -> type:
    """The store class for a URL scheme (lower case; "" for a plain path), imported now."""
    module, name = STORE_CLASSES.get(scheme, _FSSPEC)
    return getattr(importlib.import_module(module, __package__), name)  # type: ignore[no-any-return]


def store_options(cls: type) -> list[str]:
    """The option names a store class accepts (its keyword-only parameters)."""
    return list(_accepted(cls))


@functools.cache
def _accepted(cls: type) -> tuple[str, ...]:
    # Once per class: a service opens a reader per request, and inspect.signature
    # is among the dearest things an open did on the event loop.
    params = inspect.signature(cls.__init__).parameters.values()
    return tuple(sorted(p.name for p in params if p.kind is inspect.Parameter.KEYWORD_ONLY))


def _make(cls: type, options: dict[str, Any], what: str, **fixed: Any) -> Any:
    accepted = _accepted(cls)
    if cls is LocalStore and not options.get("storage_options", True):
        options = {k: v for k, v in options.items() if k != "storage_options"}  # polars'
        # storage_options=None (or {}) for a local path: nothing to configure
    unknown = sorted(set(options) - set(accepted) | set(options) & set(fixed))
    if unknown:
        names = [n for n in accepted if n not in fixed]
        near = difflib.get_close_matches(unknown[0], names, n=1)
        raise ConfigError(f"unknown option{'s' if len(unknown) > 1 else ''} "
                          f"{', '.join(map(repr, unknown))} for {what}"
                          f"{f' (did you mean {near[0]!r}?)' if near else ''}; accepted: "
                          f"{', '.join(names) or '(none)'}")
    return cls(**fixed, **options)


def _configured(scheme: str, options: dict[str, Any], what: str) -> Any:
    """A store of the built-in networked kinds, its options read in any accepted spelling."""
    from .config import config_kind, parse_config

    kind = config_kind(scheme)
    assert kind is not None
    return store_class(scheme)(**parse_config(kind, options, what=what).store_keywords()
                               if options else {})


def store_for(url: str, **options: Any) -> tuple[Store, str]:
    """The store that serves ``url`` (made with ``options``) and the key to ask it for."""
    scheme = _scheme(url)
    if scheme in ("", "file"):
        return _make(LocalStore, options, "local files"), url
    if scheme in ("s3", "s3a"):
        from .s3 import split_s3_key

        bucket, key = split_s3_key(url)
        return _configured(scheme, options, "s3:// URLs"), f"{bucket}/{key}"
    if scheme in ("gs", "gcs"):
        from .gcs import split_gcs_key

        bucket, key = split_gcs_key(url)
        return _configured(scheme, options, "gs:// URLs"), f"{bucket}/{key}"
    if scheme in STORE_CLASSES:  # http(s): the key is the whole URL
        return _configured(scheme, options, "http(s):// URLs"), url
    import fsspec

    try:
        fsspec.get_filesystem_class(scheme)
    except ValueError:
        raise CsupError(f"no store for the {scheme}:// scheme (neither built in nor known "
                        "to fsspec)", path=redact_url(url)) from None
    except ImportError as e:
        raise CsupError(f"the {scheme}:// scheme needs a package that is not installed: "
                        f"{e}", path=redact_url(url)) from None
    return (_make(store_class(scheme), options, f"{scheme}:// URLs (fsspec)", protocol=scheme),
            url)
