"""aiohttp, imported without reading the CA certificates until a TLS connection needs them.

``aiohttp.connector`` makes two SSL contexts when it is imported, and each loads the
system's CA bundle (about 20 ms of CPU each, several times that in wall time on a busy
machine) although a process reading ``http://`` endpoints or local files never
verifies a certificate, and one reading ``https://`` pays for it before its first
request rather than while its first connection is opened.  Here the import skips that
loading, for those two contexts only (in the importing thread, while aiohttp.connector
executes), and a context loads the same certificates the first time it makes a TLS
connection that verifies them (``wrap_bio``/``wrap_socket`` while its ``verify_mode``
is not ``CERT_NONE``) or shows its CA store.  If aiohttp was imported before, nothing
changes.
"""

from __future__ import annotations

import ssl
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

__all__ = ["aiohttp", "certificates_pending"]

_lock = threading.RLock()
_importing: int | None = None  # the thread importing aiohttp with loading deferred
_skipped: list[tuple[ssl.SSLContext, Any]] = []  # (context, purpose or None: verify paths)

_load_default_certs = ssl.SSLContext.load_default_certs
_set_default_verify_paths = ssl.SSLContext.set_default_verify_paths
_OWN_VERIFY_PATHS = "set_default_verify_paths" in vars(ssl.SSLContext)  # else _ssl's C method


class _Deferred(ssl.SSLContext):
    """A context whose default CA certificates are loaded on first use."""

    _csup_pending: Any = None  # a Purpose (load_default_certs) or True (verify paths)

    def _csup_load(self) -> None:
        if self.verify_mode == ssl.CERT_NONE:
            return  # nothing is checked against the CA store; load if that changes
        with _lock:
            pending = self.__dict__.pop("_csup_pending", None)
            if pending is True:
                _set_default_verify_paths(self)
            elif pending is not None:
                _load_default_certs(self, pending)

    def wrap_bio(self, *args: Any, **kwargs: Any) -> Any:
        self._csup_load()
        return super().wrap_bio(*args, **kwargs)

    def wrap_socket(self, *args: Any, **kwargs: Any) -> Any:
        self._csup_load()
        return super().wrap_socket(*args, **kwargs)

    def get_ca_certs(self, *args: Any, **kwargs: Any) -> Any:
        self._csup_load()
        return super().get_ca_certs(*args, **kwargs)

    def cert_store_stats(self) -> Any:
        self._csup_load()
        return super().cert_store_stats()


def _skip_load_default_certs(self: ssl.SSLContext,
                             purpose: Any = ssl.Purpose.SERVER_AUTH) -> None:
    if threading.get_ident() == _importing and type(self) is ssl.SSLContext:
        _skipped.append((self, purpose))
        return
    _load_default_certs(self, purpose)


def _skip_set_default_verify_paths(self: ssl.SSLContext) -> None:
    if threading.get_ident() == _importing and type(self) is ssl.SSLContext:
        _skipped.append((self, True))
        return
    _set_default_verify_paths(self)


@contextmanager
def _deferred_loading() -> Iterator[None]:
    global _importing
    if "aiohttp.connector" in sys.modules:
        yield
        return
    with _lock:
        _importing = threading.get_ident()
        ssl.SSLContext.load_default_certs = _skip_load_default_certs  # type: ignore[method-assign]
        ssl.SSLContext.set_default_verify_paths = (  # type: ignore[method-assign]
            _skip_set_default_verify_paths)
        try:
            yield
        finally:
            ssl.SSLContext.load_default_certs = _load_default_certs  # type: ignore[method-assign]
            if _OWN_VERIFY_PATHS:
                ssl.SSLContext.set_default_verify_paths = (  # type: ignore[method-assign]
                    _set_default_verify_paths)
            else:
                del ssl.SSLContext.set_default_verify_paths  # the C method shows through
            _importing = None
            for ctx, pending in _skipped:
                ctx.__class__ = _Deferred
                ctx._csup_pending = pending  # type: ignore[attr-defined]
            _skipped.clear()


def certificates_pending() -> int:
    """How many of aiohttp's contexts have not loaded their CA certificates yet."""
    import aiohttp.connector as c

    return sum(isinstance(ctx, _Deferred) and "_csup_pending" in ctx.__dict__
               for ctx in (c._SSL_CONTEXT_VERIFIED, c._SSL_CONTEXT_UNVERIFIED))


with _deferred_loading():
    import aiohttp
