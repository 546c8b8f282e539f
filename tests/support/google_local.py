"""Google's side of credentials, on 127.0.0.1: token endpoints, a metadata server, GCS.

``GoogleLocal`` is one aiohttp app served twice, over plain HTTP (the token
endpoints and the metadata server, as google-auth reaches them) and over
HTTPS with a self-signed certificate (the GCS JSON API, as a store with the
default ``adc=None`` needs it).  It behaves like the real services where the
tests look:

- ``POST /token``: the OAuth 2.0 token endpoint.  A service account's
  ``jwt-bearer`` assertion is checked (RS256 signature against the key the
  test made, issuer, audience, scope, lifetime); an authorized user's
  ``refresh_token`` grant is checked against the client id, secret and
  refresh token.  Tokens live ``lifetime`` seconds.
- ``POST /sts``: the STS token exchange of an external account (workload
  identity federation), checking the subject token.
- ``/computeMetadata/v1/...``: the metadata server (``Metadata-Flavor: Google``
  required), and ``/`` for google-auth's ping.
- ``/download/storage/v1/b/B/o/N?alt=media`` (with ``Range``),
  ``/storage/v1/b/B/o/N`` and ``/storage/v1/b/B/o?prefix=``: GCS, which
  answers 401 to a missing, unknown, expired or revoked token (objects under
  ``public/`` need none).

``ConnectProxy`` is an HTTPS proxy that terminates TLS itself and hands the
request to ``GoogleLocal``: an authorized user's token URI is always Google's
(google-auth ignores the file's), so that test reaches "Google" through
``HTTPS_PROXY`` and ``REQUESTS_CA_BUNDLE`` and never leaves 127.0.0.1.
"""

from __future__ import annotations

import asyncio
import base64
import datetime as dt
import ipaddress
import json
import re
import secrets
import ssl
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote

from bench.net import HOST, LoopThread

READ_ONLY = "https://www.googleapis.com/auth/devstorage.read_only"
SA_EMAIL = "reader@csup-tests.iam.gserviceaccount.com"
CLIENT_ID = "client-id-123.apps.googleusercontent.com"
CLIENT_SECRET = "client-SECRET-cs"
REFRESH_TOKEN = "refresh-SECRET-rt"
SUBJECT_TOKEN = "subject-SECRET-st"
STATIC_TOKEN = "static-SECRET-tok"
GOOGLE_TOKEN_URI = "https://oauth2.googleapis.com/token"


def _b64url(data: bytes) -> bytes:
    return base64.urlsafe_b64decode(data + b"=" * (-len(data) % 4))


def self_signed(tmp: Path, names: tuple[str, ...] = ()) -> tuple[Path, Path]:
    """A certificate for 127.0.0.1 (and ``names``) and its key, as PEM files."""
    from cryptography import x509
    from cryptography.hazmat.primitives import hashes, serialization
    from cryptography.hazmat.primitives.asymmetric import ec
    from cryptography.x509.oid import NameOID

    key = ec.generate_private_key(ec.SECP256R1())
    name = x509.Name([x509.NameAttribute(NameOID.COMMON_NAME, names[0] if names else HOST)])
    now = dt.datetime.now(dt.UTC)
    alt = [x509.IPAddress(ipaddress.ip_address(HOST)), *(x509.DNSName(n) for n in names)]
    cert = (x509.CertificateBuilder().subject_name(name).issuer_name(name)
            .public_key(key.public_key()).serial_number(x509.random_serial_number())
            .not_valid_before(now - dt.timedelta(minutes=5))
            .not_valid_after(now + dt.timedelta(days=1))
            .add_extension(x509.SubjectAlternativeName(alt), critical=False)
            .add_extension(x509.BasicConstraints(ca=True, path_length=None), critical=True)
            .sign(key, hashes.SHA256()))
    tag = names[0] if names else "localhost"
    cert_path, key_path = tmp / f"{tag}-cert.pem", tmp / f"{tag}-key.pem"
    cert_path.write_bytes(cert.public_bytes(serialization.Encoding.PEM))
    key_path.write_bytes(key.private_bytes(serialization.Encoding.PEM,
                                           serialization.PrivateFormat.PKCS8,
                                           serialization.NoEncryption()))
    return cert_path, key_path


@dataclass
class Issued:
    token: str
    expires: float  # time.time()
    grant: str


@dataclass
class Stats:
    issued: list[Issued] = field(default_factory=list)
    token_requests: int = 0
    token_in_flight: int = 0
    max_token_in_flight: int = 0
    refused_grants: list[str] = field(default_factory=list)
    metadata_paths: list[str] = field(default_factory=list)
    gcs_ok: int = 0
    gcs_refused: list[str] = field(default_factory=list)  # why each 401 was sent
    gcs_auth: list[str | None] = field(default_factory=list)  # Authorization seen


class GoogleLocal:
    def __init__(self, tmp: Path) -> None:
        from cryptography.hazmat.primitives import serialization
        from cryptography.hazmat.primitives.asymmetric import rsa

        self.tmp = tmp
        self.key = rsa.generate_private_key(public_exponent=65537, key_size=2048)
        self.key_pem = self.key.private_bytes(
            serialization.Encoding.PEM, serialization.PrivateFormat.PKCS8,
            serialization.NoEncryption()).decode()
        self.key_id = secrets.token_hex(20)
        self.lifetime = 3600.0
        self.token_delay = 0.0  # seconds each token request takes
        self.gate: threading.Event | None = None  # token requests wait for it, if set
        self.revoked_grants = False  # the token endpoint refuses every grant
        self.objects: dict[str, tuple[bytes, int]] = {}
        self.static_tokens: set[str] = set()
        self.stats = Stats()
        self._tokens: dict[str, Issued] = {}
        self._lock = threading.Lock()
        self._loop = LoopThread("google-local")
        self._runner: Any = None
        self.http_port = 0
        self.https_port = 0
        self.cert, self.cert_key = self_signed(tmp)

    # --------------------------------------------------------------- setup ---
    @property
    def http(self) -> str:
        return f"http://{HOST}:{self.http_port}"

    @property
    def https(self) -> str:
        return f"https://{HOST}:{self.https_port}"

    def put(self, name: str, data: bytes) -> str:
        """Store ``bucket/name``; return its gs:// URL."""
        gen = int(time.time() * 1e6)
        self.objects[name] = (data, gen)
        return f"gs://{name}"

    def reset(self) -> None:
        with self._lock:
            self.stats = Stats()
            self._tokens.clear()
        self.lifetime, self.token_delay, self.gate = 3600.0, 0.0, None
        self.revoked_grants = False
        self.static_tokens = set()

    def revoke_tokens(self) -> None:
        with self._lock:
            self._tokens.clear()

    def tokens(self) -> list[str]:
        return [i.token for i in self.stats.issued]

    def service_account_file(self, path: Path) -> Path:
        path.write_text(json.dumps({
            "type": "service_account", "project_id": "csup-tests",
            "private_key_id": self.key_id, "private_key": self.key_pem,
            "client_email": SA_EMAIL, "client_id": "1234567890",
            "token_uri": f"{self.http}/token",
        }))
        return path

    def authorized_user_file(self, path: Path) -> Path:
        path.write_text(json.dumps({
            "type": "authorized_user", "client_id": CLIENT_ID,
            "client_secret": CLIENT_SECRET, "refresh_token": REFRESH_TOKEN,
        }))
        return path

    def external_account_file(self, path: Path) -> Path:
        subject = path.with_suffix(".subject")
        subject.write_text(SUBJECT_TOKEN)
        path.write_text(json.dumps({
            "type": "external_account",
            "audience": "//iam.googleapis.com/projects/1/locations/global/"
                        "workloadIdentityPools/csup/providers/local",
            "subject_token_type": "urn:ietf:params:oauth:token-type:jwt",
            "token_url": f"{self.http}/sts",
            "credential_source": {"file": str(subject)},
        }))
        return path

    def start(self) -> GoogleLocal:
        from aiohttp import web

        self._loop.start()
        ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        ctx.load_cert_chain(self.cert, self.cert_key)

        async def boot() -> tuple[int, int]:
            app = web.Application()
            app.router.add_route("*", "/{tail:.*}", self._handle)
            runner = web.AppRunner(app, access_log=None, shutdown_timeout=1.0)
            await runner.setup()
            await web.TCPSite(runner, HOST, 0).start()
            await web.TCPSite(runner, HOST, 0, ssl_context=ctx).start()
            self._runner = runner
            ports = [int(a[1]) for a in runner.addresses]
            return ports[0], ports[1]

        self.http_port, self.https_port = self._loop.run(boot())
        return self

    def stop(self) -> None:
        if self._runner is not None:
            self._loop.run(self._runner.cleanup())
        self._loop.stop()

    # ------------------------------------------------------------- tokens ---
    def _issue(self, grant: str) -> dict[str, Any]:
        token = "ya29.local-" + secrets.token_urlsafe(24)
        issued = Issued(token, time.time() + self.lifetime, grant)
        with self._lock:
            self._tokens[token] = issued
            self.stats.issued.append(issued)
        return {"access_token": token, "expires_in": self.lifetime, "token_type": "Bearer"}

    def _check_assertion(self, assertion: str) -> str | None:
        """Why the signed JWT is refused, or None when it is good."""
        from cryptography.exceptions import InvalidSignature
        from cryptography.hazmat.primitives import hashes
        from cryptography.hazmat.primitives.asymmetric import padding

        try:
            head_b, claims_b, sig_b = assertion.encode().split(b".")
            head = json.loads(_b64url(head_b))
            claims = json.loads(_b64url(claims_b))
            self.key.public_key().verify(_b64url(sig_b), head_b + b"." + claims_b,
                                         padding.PKCS1v15(), hashes.SHA256())
        except (ValueError, InvalidSignature):
            return "bad signature or encoding"
        now = time.time()
        if head.get("alg") != "RS256" or head.get("kid") != self.key_id:
            return "wrong algorithm or key id"
        # google-auth always names Google's token endpoint as the audience
        if claims.get("iss") != SA_EMAIL or claims.get("aud") != GOOGLE_TOKEN_URI:
            return "wrong issuer or audience"
        if READ_ONLY not in str(claims.get("scope", "")).split():
            return "no read-only storage scope"
        if not (claims["iat"] - 300 <= now <= claims["exp"] + 300):
            return "expired assertion"
        return None

    async def _token(self, request: Any) -> Any:
        from aiohttp import web

        form = await request.post()
        with self._lock:
            self.stats.token_requests += 1
            self.stats.token_in_flight += 1
            self.stats.max_token_in_flight = max(self.stats.max_token_in_flight,
                                                 self.stats.token_in_flight)
        try:
            if self.gate is not None:
                opened = await asyncio.to_thread(self.gate.wait, 20)
                if not opened:
                    return web.json_response({"error": "gate never opened"}, status=500)
            if self.token_delay:
                await asyncio.sleep(self.token_delay)
            grant = form.get("grant_type", "")
            if grant == "urn:ietf:params:oauth:grant-type:jwt-bearer":
                why = self._check_assertion(str(form.get("assertion", "")))
            elif grant == "refresh_token":
                why = None if (form.get("client_id"), form.get("client_secret"),
                               form.get("refresh_token")) == (CLIENT_ID, CLIENT_SECRET,
                                                              REFRESH_TOKEN) else "bad client"
            elif grant == "urn:ietf:params:oauth:grant-type:token-exchange":
                why = None if form.get("subject_token") == SUBJECT_TOKEN else "bad subject"
            else:
                why = f"unsupported grant {grant!r}"
            if why is None and self.revoked_grants:
                why = "revoked"
            if why is not None:
                self.stats.refused_grants.append(why)
                return web.json_response({"error": "invalid_grant",
                                          "error_description": why}, status=400)
            doc = self._issue(str(grant))
            if request.path == "/sts":
                doc["issued_token_type"] = "urn:ietf:params:oauth:token-type:access_token"
            return web.json_response(doc)
        finally:
            with self._lock:
                self.stats.token_in_flight -= 1

    # ----------------------------------------------------------- metadata ---
    async def _metadata(self, request: Any) -> Any:
        from aiohttp import web

        flavor = {"Metadata-Flavor": "Google"}
        if request.headers.get("Metadata-Flavor") != "Google":
            return web.Response(status=403, text="missing Metadata-Flavor")
        path = request.path.removeprefix("/computeMetadata/v1")
        self.stats.metadata_paths.append(path)
        if path in ("", "/"):
            return web.Response(text="computeMetadata/", headers=flavor)
        if path == "/project/project-id":
            return web.Response(text="csup-tests", headers=flavor)
        if path == "/instance/service-accounts/default/":
            return web.json_response({"email": SA_EMAIL, "scopes": [READ_ONLY],
                                      "aliases": ["default"]}, headers=flavor)
        if path.startswith("/instance/service-accounts/") and path.endswith("/token"):
            with self._lock:
                self.stats.token_requests += 1
            return web.json_response(self._issue("metadata"), headers=flavor)
        return web.Response(status=404, text="not found", headers=flavor)

    # ---------------------------------------------------------------- GCS ---
    def _refusal(self, request: Any, name: str) -> str | None:
        auth = request.headers.get("Authorization")
        self.stats.gcs_auth.append(auth)
        if name.split("/", 1)[-1].startswith("public/"):
            return None
        if not auth or not auth.startswith("Bearer "):
            return "no token"
        token = auth.removeprefix("Bearer ")
        if token in self.static_tokens:
            return None
        with self._lock:
            issued = self._tokens.get(token)
        if issued is None:
            return "unknown or revoked token"
        if time.time() >= issued.expires:
            return "expired token"
        return None

    async def _gcs(self, request: Any) -> Any:
        from aiohttp import web

        m = re.match(r"^(?:/download)?/storage/v1/b/([^/]+)/o(?:/(.+))?$", request.raw_path
                     .split("?")[0])
        if not m:
            return web.Response(status=404)
        bucket, name = unquote(m.group(1)), unquote(m.group(2) or "")
        why = self._refusal(request, f"{bucket}/{name}")
        if why is not None:
            self.stats.gcs_refused.append(why)
            return web.json_response({"error": {"code": 401, "message": "Invalid Credentials"}},
                                     status=401)
        self.stats.gcs_ok += 1
        if not name:  # listing
            prefix = f"{bucket}/{request.query.get('prefix', '')}"
            items = [{"name": k.split("/", 1)[1], "size": str(len(self.objects[k][0]))}
                     for k in sorted(self.objects) if k.startswith(prefix)]
            return web.json_response({"items": items})
        found = self.objects.get(f"{bucket}/{name}")
        if found is None:
            return web.json_response({"error": {"code": 404, "message": "No such object"}},
                                     status=404)
        data, gen = found
        if request.query.get("alt") != "media":
            return web.json_response({"size": str(len(data)), "generation": str(gen)})
        headers = {"x-goog-generation": str(gen)}
        rng = request.headers.get("Range")
        if rng is None:
            return web.Response(body=data, headers=headers)
        start_s, end_s = rng.removeprefix("bytes=").split("-")
        if not start_s:
            start, end = max(0, len(data) - int(end_s)), len(data) - 1
        else:
            start, end = int(start_s), min(int(end_s or len(data) - 1), len(data) - 1)
        headers["Content-Range"] = f"bytes {start}-{end}/{len(data)}"
        return web.Response(status=206, body=data[start:end + 1], headers=headers)

    async def _handle(self, request: Any) -> Any:
        from aiohttp import web

        path = request.path
        if path in ("/token", "/sts") and request.method == "POST":
            return await self._token(request)
        if path == "/" or path.startswith("/computeMetadata/"):
            return await self._metadata(request)
        if "/storage/v1/b/" in path and request.method == "GET":
            return await self._gcs(request)
        return web.Response(status=404)


class ConnectProxy:
    """An HTTPS proxy on 127.0.0.1 that answers every CONNECT itself (see the module doc).

    The tunnelled TLS is terminated with a certificate for ``hosts`` and the
    plain request is piped to ``upstream_port`` (GoogleLocal's HTTP site).
    ``connects`` lists the hosts clients asked for.
    """

    def __init__(self, tmp: Path, upstream_port: int,
                 hosts: tuple[str, ...] = ("oauth2.googleapis.com",)) -> None:
        self.cert, key = self_signed(tmp, hosts)
        self._ctx = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        self._ctx.load_cert_chain(self.cert, key)
        self.upstream_port = upstream_port
        self.connects: list[str] = []
        self._loop = LoopThread("connect-proxy")
        self._server: asyncio.Server | None = None
        self.port = 0

    @property
    def url(self) -> str:
        return f"http://{HOST}:{self.port}"

    def start(self) -> ConnectProxy:
        self._loop.start()

        async def boot() -> int:
            self._server = await asyncio.start_server(self._client, HOST, 0)
            return int(self._server.sockets[0].getsockname()[1])

        self.port = self._loop.run(boot())
        return self

    def stop(self) -> None:
        if self._server is not None:
            self._server.close()
        self._loop.stop()

    async def _client(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter
                      ) -> None:
        try:
            head = await reader.readuntil(b"\r\n\r\n")
            line = head.split(b"\r\n", 1)[0].decode()
            method, target, _ = line.split(" ", 2)
            if method != "CONNECT":
                writer.write(b"HTTP/1.1 405 Method Not Allowed\r\ncontent-length: 0\r\n\r\n")
                return
            self.connects.append(target)
            writer.write(b"HTTP/1.1 200 Connection established\r\n\r\n")
            await writer.drain()
            await writer.start_tls(self._ctx)
            up_r, up_w = await asyncio.open_connection(HOST, self.upstream_port)

            async def pipe(src: asyncio.StreamReader, dst: asyncio.StreamWriter) -> None:
                try:
                    while data := await src.read(65536):
                        dst.write(data)
                        await dst.drain()
                finally:
                    dst.close()

            await asyncio.gather(pipe(reader, up_w), pipe(up_r, writer),
                                 return_exceptions=True)
        except (OSError, ValueError, asyncio.IncompleteReadError, ssl.SSLError):
            pass
        finally:
            writer.close()
