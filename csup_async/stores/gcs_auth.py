"""Google Application Default Credentials for the GCS store, without blocking the loop.

``google-auth`` finds the credentials (``GOOGLE_APPLICATION_CREDENTIALS``: a
service-account key, an authorized-user file or an external account for
workload identity federation; gcloud's ``application_default_credentials.json``;
the metadata server on GCE, GKE and Cloud Run) and mints tokens; this module
only decides *when*.  google-auth is synchronous (it blocks on HTTP), so
finding and refreshing run in a worker thread, and concurrent requests that
need a token share one refresh instead of each starting its own: 50 reads that
meet an expiring token cost one call to the token endpoint.  A token is
refreshed a little before it expires (from a quarter of its lifetime, at most
four minutes, before), in the background while it is still sent, so a request
never leaves with a token about to lapse and readers rarely wait for one.
Credentials are shared by every store of the process (per environment), so
opening file after file costs one search and one token, not one per file.

google-auth is imported on first use, so a process that reads no ``gs://``
object needing credentials never pays for the import.  Nothing here is ever
shown: the repr names the kind of credentials, never a token or key, and a
pickled provider carries no credentials (the new process finds its own).
"""

from __future__ import annotations

import asyncio
import datetime as dt
import json
import os
import threading
import warnings
import weakref
from typing import Any

from ..model.errors import AccessDeniedError, StoreError
from ..model.redact import redact_text
from .retry import Retryable

__all__ = ["READ_ONLY_SCOPE", "SOURCES_TRIED", "DefaultCredentials", "shared_credentials"]

READ_ONLY_SCOPE = "https://www.googleapis.com/auth/devstorage.read_only"
SOURCES_TRIED = ("the token option, GOOGLE_OAUTH_ACCESS_TOKEN, GOOGLE_APPLICATION_CREDENTIALS, "
                 "gcloud's application-default credentials, the metadata server")
_MAX_EARLY = dt.timedelta(minutes=4)
# what google-auth's search depends on: a change makes a new search
_SEARCH_ENV = ("GOOGLE_APPLICATION_CREDENTIALS", "CLOUDSDK_CONFIG", "HOME", "GCE_METADATA_HOST",
               "GCE_METADATA_ROOT", "GCE_METADATA_IP", "NO_GCE_CHECK")
_SHARED: dict[tuple[Any, ...], DefaultCredentials] = {}
_SHARED_LOCK = threading.Lock()


def shared_credentials(scopes: tuple[str, ...] = (READ_ONLY_SCOPE,)) -> DefaultCredentials:
    """The process's credentials for ``scopes`` and the current environment.

    Shared by every store, so opening one file after another (or one Spark
    task after another in a reused worker) costs one search and one token,
    not one per store.
    """
    key = (tuple(scopes), *(os.environ.get(name) for name in _SEARCH_ENV))
    with _SHARED_LOCK:
        found = _SHARED.get(key)
        if found is None:
            found = _SHARED[key] = DefaultCredentials(tuple(scopes))
        return found


def service_account_credentials(file: str | None = None, key: str | None = None,
                                scopes: tuple[str, ...] = (READ_ONLY_SCOPE,)
                                ) -> DefaultCredentials:
    """Credentials of one service account: its JSON key ``file`` (shared per file, as
    the default ones are), or the key's JSON text ``key`` (a store's own)."""
    if key is not None:
        return DefaultCredentials(tuple(scopes), key=key)
    where = os.path.abspath(os.fspath(file or ""))
    with _SHARED_LOCK:
        found = _SHARED.get(("file", where, *scopes))
        if found is None:
            found = _SHARED[("file", where, *scopes)] = DefaultCredentials(tuple(scopes),
                                                                           file=where)
        return found


def _now() -> dt.datetime:
    # google-auth keeps expiries as naive UTC datetimes
    return dt.datetime.now(dt.UTC).replace(tzinfo=None)


def _describe(creds: Any) -> str:
    """Which kind of credentials these are, and where they came from (no secret)."""
    module = type(creds).__module__
    if module.endswith("compute_engine.credentials"):
        kind = "the metadata server"
    elif module.endswith("service_account"):
        email = getattr(creds, "service_account_email", None)
        kind = "a service-account key" + (f" ({email})" if isinstance(email, str) else "")
    elif module.endswith("oauth2.credentials"):
        kind = "authorized-user credentials"
    elif module.endswith(("external_account", "identity_pool", "aws", "pluggable")):
        kind = "an external account (workload identity federation)"
    elif module.endswith("impersonated_credentials"):
        kind = "impersonated credentials"
    else:
        kind = type(creds).__name__
    if module.endswith("compute_engine.credentials"):
        return kind
    where = ("GOOGLE_APPLICATION_CREDENTIALS" if os.environ.get("GOOGLE_APPLICATION_CREDENTIALS")
             else "gcloud's application-default credentials")
    return f"{kind} from {where}"


def _gcloud_file() -> str | None:
    """gcloud's application-default credentials file, if there is one."""
    try:
        from google.auth import _cloud_sdk

        path = _cloud_sdk.get_application_default_credentials_path()
    except (ImportError, AttributeError, OSError):  # a google-auth without it: default()
        return None
    return path if os.path.isfile(path) else None


def _reason(e: BaseException) -> str:
    """google-auth's message (the server's error code and description), secret-free."""
    first = e.args[0] if e.args and isinstance(e.args[0], str) else ""
    return f"{type(e).__name__}: {redact_text(first)[:200]}" if first else type(e).__name__


class DefaultCredentials:
    """Bearer-token headers from Application Default Credentials, found on first use.

    ``source`` says which credentials were found (``None``: none, or not
    looked for yet).  Safe to share between event loops and threads: the
    blocking work is serialised by a lock, and each loop waits on its own
    shared future.
    """

    def __init__(self, scopes: tuple[str, ...] = (READ_ONLY_SCOPE,), *,
                 file: str | None = None, key: str | None = None) -> None:
        self.scopes = scopes
        #: a service account's key file, or its JSON text: these, not the search
        self._file, self._key = file, key
        self.source: str | None = None
        self._searched = False
        self._creds: Any = None
        self._headers: dict[str, str] = {}
        self._expiry: dt.datetime | None = None
        self._early = dt.timedelta(0)
        self._lock = threading.Lock()
        # per loop (a closed loop's entry goes with it)
        self._pending: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop,
                                                 asyncio.Future[None]] = (
            weakref.WeakKeyDictionary())
        self.refreshes = 0  # tokens fetched (for diagnostics and tests)

    def __repr__(self) -> str:
        found = self.source if self._searched else "not looked for yet"
        return f"DefaultCredentials({found or 'none found'})"

    def __reduce__(self) -> tuple[Any, tuple[Any, ...]]:
        # unpickled as the receiving process's own: no token travels (a key given as
        # text does: the configuration that named it travels the same way)
        if self._file is not None or self._key is not None:
            return service_account_credentials, (self._file, self._key, self.scopes)
        return shared_credentials, (self.scopes,)

    @property
    def found(self) -> bool | None:
        """True: credentials found; False: none; None: not looked for yet."""
        return (self._creds is not None) if self._searched else None

    def _fresh(self, margin: float = 1.0) -> bool:
        """The token has more than ``margin`` times the early-refresh window left."""
        if not self._headers:
            return False
        return self._expiry is None or _now() + self._early * margin < self._expiry

    async def headers(self, path: str) -> dict[str, str]:
        """The headers that authorize a request (empty when no credentials exist).

        A token inside its early-refresh window is still sent while one
        background refresh replaces it; only a token within a quarter of that
        window of expiring (or none yet) makes requests wait for the refresh.
        """
        if self._searched:
            if self._creds is None or self._fresh():
                return self._headers
            if self._fresh(margin=0.25):
                self._refreshing(asyncio.get_running_loop())
                return self._headers
        try:
            # shielded: one caller's cancellation must not cancel the others' refresh
            await asyncio.shield(self._refreshing(asyncio.get_running_loop()))
        except Exception as e:
            raise self._error(e, path) from None
        return self._headers

    def _refreshing(self, loop: asyncio.AbstractEventLoop) -> asyncio.Future[None]:
        """This loop's refresh in flight, started if there is none."""
        pending = self._pending.get(loop)
        if pending is None or pending.done():
            pending = asyncio.ensure_future(asyncio.to_thread(self._update))
            self._pending[loop] = pending

            def done(f: asyncio.Future[None]) -> None:
                self._pending.pop(loop, None)
                if not f.cancelled():
                    f.exception()  # a background refresh's failure is met again by the next

            pending.add_done_callback(done)
        return pending

    # ----------------------------------------------------- in a worker thread ---
    def _update(self) -> None:
        with self._lock:
            if not self._searched:
                self._find()
            if self._creds is not None and not self._fresh():
                self._refresh()

    def _find(self) -> None:
        import google.auth
        from google.auth.credentials import with_scopes_if_required
        from google.auth.exceptions import DefaultCredentialsError

        scopes = list(self.scopes)
        if self._file is not None or self._key is not None:  # one named account
            self._creds = self._named(scopes)
            self.source = _describe(self._creds)
            self._searched = True
            return
        try:
            # The two files are loaded here rather than by google.auth.default(),
            # which then looks for a project: for an external account it asks
            # Cloud Resource Manager, for gcloud's file it runs gcloud -- a
            # request (and a permission) or a process a GCS read does not need.
            # Loaded without scopes (which is what keeps the project lookup
            # away), then scoped.
            path = os.environ.get("GOOGLE_APPLICATION_CREDENTIALS") or _gcloud_file()
            if path:
                with warnings.catch_warnings():  # as default() does: the file is the user's
                    warnings.simplefilter("ignore", DeprecationWarning)
                    creds, _ = google.auth.load_credentials_from_file(path)
                creds = with_scopes_if_required(creds, scopes)
            else:
                creds, _ = google.auth.default(scopes=scopes)
        except DefaultCredentialsError as e:
            if "default credentials were not found" not in str(e):
                raise  # a file that is there but unusable: say so, do not go anonymous
            creds = None
        self._creds = creds
        self.source = None if creds is None else _describe(creds)
        self._searched = True

    def _named(self, scopes: list[str]) -> Any:
        """The service account of ``file`` or ``key`` (DefaultCredentialsError when it is
        unusable: a missing file, a key that is not a service account's)."""
        from google.auth.exceptions import DefaultCredentialsError
        from google.oauth2 import service_account

        try:
            if self._key is not None:
                return service_account.Credentials.from_service_account_info(
                    json.loads(self._key), scopes=scopes)
            return service_account.Credentials.from_service_account_file(
                self._file, scopes=scopes)
        except (OSError, ValueError, KeyError) as e:  # no file; not JSON; not a key
            what = "service_account_key" if self._key is not None else "service_account"
            reason = ("the file cannot be read" if isinstance(e, OSError)
                      else "it is not a service account's JSON key")
            raise DefaultCredentialsError(f"{what}: {reason}") from None

    def _refresh(self) -> None:
        from google.auth.transport.requests import Request

        creds = self._creds
        before = _now()
        creds.refresh(Request())
        self.refreshes += 1
        headers: dict[str, str] = {}
        creds.apply(headers)
        expiry = creds.expiry
        self._expiry = expiry
        self._early = min(_MAX_EARLY, (expiry - before) / 4) if expiry else dt.timedelta(0)
        self._headers = {k: v for k, v in headers.items() if isinstance(v, str)}

    def _error(self, e: BaseException, path: str) -> StoreError:
        from google.auth import exceptions as gx

        source = self.source or "Application Default Credentials"
        if isinstance(e, gx.DefaultCredentialsError):
            return AccessDeniedError(f"unusable Google credentials: {_reason(e)}", path=path)
        if isinstance(e, (gx.TransportError, gx.RefreshError)) and getattr(e, "retryable",
                                                                           False):
            return Retryable(StoreError(f"could not get a token from {source}: "
                                        f"{_reason(e)}", path=path))
        if isinstance(e, gx.RefreshError):
            return AccessDeniedError(f"{source} was refused a token ({_reason(e)})", path=path)
        if isinstance(e, gx.TransportError):
            return Retryable(StoreError(f"could not reach the token server of {source}: "
                                        f"{_reason(e)}", path=path))
        return AccessDeniedError(f"could not get a token from {source} "
                                 f"({type(e).__name__})", path=path)
