"""Where written files go: local disk, S3, or any fsspec filesystem.

The read side's stores only read; a write needs five more operations (upload,
server-side move, list, delete, small put), and each store kind has its own
idea of a move: ``os.replace`` is atomic on one filesystem, S3 has only copy
then delete (multipart above 5 GiB), fsspec has ``mv``.  The commit rule in
:mod:`.write` only relies on "an object appears complete or not at all",
which all three give.
"""

from __future__ import annotations

import asyncio
import contextlib
import os
import shutil
from collections.abc import Sequence
from typing import Any, Protocol

from ..model.errors import CsupError, StoreError
from ..stores import redact_url
from ..stores.config import given, parse_config
from ..stores.logmask import install_log_mask

PART_SIZE = 64 << 20  # multipart upload part size (and the single-PUT limit we use)
COPY_LIMIT = 5 << 30  # S3's CopyObject limit; larger objects are copied in parts


class Sink(Protocol):
    def spool_dir(self, key: str) -> str | None:
        """A local directory to build ``key`` in (None: the system's temporary directory)."""
        ...

    async def put_file(self, local: str, key: str) -> None: ...
    async def put_bytes(self, key: str, data: bytes) -> None: ...
    async def move(self, src: str, dst: str, size: int) -> None: ...
    async def list(self, prefix: str) -> list[str]: ...
    async def delete(self, keys: Sequence[str]) -> None: ...
    async def delete_prefix(self, prefix: str) -> None: ...
    async def close(self) -> None: ...


class LocalSink:
    """Local (or shared) disk: files are built in place and renamed, atomically."""

    def spool_dir(self, key: str) -> str | None:
        d = os.path.dirname(key) or "."
        os.makedirs(d, exist_ok=True)
        return d

    async def put_file(self, local: str, key: str) -> None:
        os.makedirs(os.path.dirname(key) or ".", exist_ok=True)
        if os.path.abspath(local) != os.path.abspath(key):
            shutil.move(local, key)

    async def put_bytes(self, key: str, data: bytes) -> None:
        os.makedirs(os.path.dirname(key) or ".", exist_ok=True)
        tmp = os.path.join(os.path.dirname(key) or ".", f".{os.path.basename(key)}.tmp")
        with open(tmp, "wb") as f:
            f.write(data)
        os.replace(tmp, key)

    async def move(self, src: str, dst: str, size: int) -> None:
        os.makedirs(os.path.dirname(dst) or ".", exist_ok=True)
        os.replace(src, dst)

    async def list(self, prefix: str) -> list[str]:
        if not os.path.isdir(prefix):
            return []
        return sorted(os.path.join(d, f) for d, _, fs in os.walk(prefix) for f in fs)

    async def delete(self, keys: Sequence[str]) -> None:
        for k in keys:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(k)

    async def delete_prefix(self, prefix: str) -> None:
        shutil.rmtree(prefix, ignore_errors=True)
        parent = os.path.dirname(prefix.rstrip("/"))
        with contextlib.suppress(OSError):
            os.rmdir(parent)  # the staging root, once no other job uses it

    async def close(self) -> None:
        pass


def _split(url: str) -> tuple[str, str]:
    from ..stores.s3 import split_s3_key

    return split_s3_key(url)


class S3Sink:
    """S3 through aiobotocore, configured from the same options as the read side's S3Store."""

    def __init__(self, *, endpoint_url: str | None = None, region: str | None = None,
                 access_key_id: str | None = None, secret_access_key: str | None = None,
                 session_token: str | None = None, aws_profile: str | None = None,
                 anonymous: bool = False, path_style: bool | None = None, limit: int = 64,
                 connect_timeout: float = 10.0, read_timeout: float = 60.0,
                 verify_ssl: bool = True) -> None:
        self._kw = dict(endpoint_url=endpoint_url, region=region, aws_profile=aws_profile,
                        anonymous=anonymous, limit=limit, connect_timeout=connect_timeout,
                        read_timeout=read_timeout, verify_ssl=verify_ssl)
        self._path_style = bool(endpoint_url) if path_style is None else path_style
        self._creds = (access_key_id, secret_access_key, session_token)
        self._cm: Any = None
        self._client: Any = None

    def __repr__(self) -> str:
        endpoint = self._kw["endpoint_url"]
        return f"S3Sink(endpoint_url={endpoint and redact_url(endpoint)!r})"

    def spool_dir(self, key: str) -> str | None:
        return None

    async def _c(self) -> Any:
        if self._client is None:
            import botocore
            from aiobotocore.config import AioConfig
            from aiobotocore.session import AioSession

            kw = self._kw
            session = AioSession(profile=kw["aws_profile"])
            region = kw["region"] or session.get_config_variable("region") or "us-east-1"
            config: dict[str, Any] = {
                "connect_timeout": kw["connect_timeout"], "read_timeout": kw["read_timeout"],
                "max_pool_connections": kw["limit"],
                "retries": {"max_attempts": 5, "mode": "standard"},
                "request_checksum_calculation": "when_required",
                "response_checksum_validation": "when_required",
            }
            if self._path_style:
                config["s3"] = {"addressing_style": "path"}
            if kw["anonymous"]:
                config["signature_version"] = botocore.UNSIGNED
            key_id, secret, token = self._creds
            install_log_mask(secret, token)  # botocore logs signed requests at DEBUG
            self._cm = session.create_client(
                "s3", region_name=region, endpoint_url=kw["endpoint_url"],
                aws_access_key_id=key_id, aws_secret_access_key=secret,
                aws_session_token=token, verify=kw["verify_ssl"], config=AioConfig(**config))
            self._client = await self._cm.__aenter__()
        return self._client

    async def _call(self, what: str, url: str, op: str, **params: Any) -> Any:
        try:
            client = await self._c()
            return await getattr(client, op)(**params)
        except CsupError:
            raise
        except Exception as e:  # botocore/aiohttp errors carry no credentials, but URLs may
            from ..model.redact import redact_text

            raise StoreError(f"{what} failed: {type(e).__name__}: {redact_text(str(e))}",
                             path=redact_url(url)) from None

    async def put_file(self, local: str, key: str) -> None:
        bucket, name = _split(key)
        size = os.path.getsize(local)
        if size <= PART_SIZE:
            with open(local, "rb") as f:
                data = f.read()
            await self._call("upload", key, "put_object", Bucket=bucket, Key=name, Body=data)
            return
        up = await self._call("upload", key, "create_multipart_upload", Bucket=bucket,
                              Key=name)
        uid = up["UploadId"]
        try:
            parts = []
            with open(local, "rb") as f:
                for number in range(1, (size + PART_SIZE - 1) // PART_SIZE + 1):
                    chunk = f.read(PART_SIZE)
                    r = await self._call("upload", key, "upload_part", Bucket=bucket, Key=name,
                                         UploadId=uid, PartNumber=number, Body=chunk)
                    parts.append({"ETag": r["ETag"], "PartNumber": number})
            await self._call("upload", key, "complete_multipart_upload", Bucket=bucket,
                             Key=name, UploadId=uid, MultipartUpload={"Parts": parts})
        except BaseException:
            await self._call("abort upload", key, "abort_multipart_upload", Bucket=bucket,
                             Key=name, UploadId=uid)
            raise

    async def put_bytes(self, key: str, data: bytes) -> None:
        bucket, name = _split(key)
        await self._call("upload", key, "put_object", Bucket=bucket, Key=name, Body=data)

    async def move(self, src: str, dst: str, size: int) -> None:
        sb, sk = _split(src)
        db, dk = _split(dst)
        source = {"Bucket": sb, "Key": sk}
        if size <= COPY_LIMIT:
            await self._call("copy", dst, "copy_object", Bucket=db, Key=dk, CopySource=source)
        else:
            await self._copy_parts(dst, db, dk, source, size)
        await self._call("delete", src, "delete_object", Bucket=sb, Key=sk)

    async def _copy_parts(self, dst: str, db: str, dk: str, source: dict[str, str],
                          size: int) -> None:
        up = await self._call("copy", dst, "create_multipart_upload", Bucket=db, Key=dk)
        uid, step, parts = up["UploadId"], 1 << 30, []
        try:
            for number, start in enumerate(range(0, size, step), start=1):
                end = min(size, start + step) - 1
                r = await self._call("copy", dst, "upload_part_copy", Bucket=db, Key=dk,
                                     UploadId=uid, PartNumber=number, CopySource=source,
                                     CopySourceRange=f"bytes={start}-{end}")
                parts.append({"ETag": r["CopyPartResult"]["ETag"], "PartNumber": number})
            await self._call("copy", dst, "complete_multipart_upload", Bucket=db, Key=dk,
                             UploadId=uid, MultipartUpload={"Parts": parts})
        except BaseException:
            await self._call("abort copy", dst, "abort_multipart_upload", Bucket=db, Key=dk,
                             UploadId=uid)
            raise

    async def list(self, prefix: str) -> list[str]:
        bucket, _, name = prefix.removeprefix("s3a://").removeprefix("s3://").partition("/")
        out: list[str] = []
        token: str | None = None
        while True:
            params: dict[str, Any] = {"Bucket": bucket, "Prefix": name}
            if token:
                params["ContinuationToken"] = token
            page = await self._call("list", prefix, "list_objects_v2", **params)
            out += [f"s3://{bucket}/{o['Key']}" for o in page.get("Contents", ())]
            token = page.get("NextContinuationToken")
            if not page.get("IsTruncated") or not token:
                return out

    async def delete(self, keys: Sequence[str]) -> None:
        by_bucket: dict[str, list[str]] = {}
        for k in keys:
            b, n = _split(k)
            by_bucket.setdefault(b, []).append(n)
        for b, names in by_bucket.items():
            for i in range(0, len(names), 1000):
                objs = [{"Key": n} for n in names[i:i + 1000]]
                r = await self._call("delete", f"s3://{b}/{names[i]}", "delete_objects",
                                     Bucket=b, Delete={"Objects": objs, "Quiet": True})
                if r.get("Errors"):
                    e = r["Errors"][0]
                    raise StoreError(f"delete failed: {e.get('Code')}",
                                     path=f"s3://{b}/{e.get('Key')}")

    async def delete_prefix(self, prefix: str) -> None:
        await self.delete(await self.list(prefix))

    async def close(self) -> None:
        cm, self._cm, self._client = self._cm, None, None
        if cm is not None:
            await cm.__aexit__(None, None, None)


class FsspecSink:
    """Any fsspec filesystem (``gs://`` through gcsfs, ``memory://``, ...), in worker threads."""

    def __init__(self, protocol: str, storage_options: dict[str, Any] | None = None) -> None:
        import fsspec

        try:
            self.fs = fsspec.filesystem(protocol, **(storage_options or {}))
        except ImportError as e:
            raise CsupError(f"writing {protocol}:// needs an fsspec implementation: {e}"
                            ) from None
        self.protocol = protocol

    def spool_dir(self, key: str) -> str | None:
        return None

    def _url(self, path: str) -> str:
        return path if "://" in path else f"{self.protocol}://{path}"

    async def put_file(self, local: str, key: str) -> None:
        await asyncio.to_thread(self.fs.put_file, local, key)

    async def put_bytes(self, key: str, data: bytes) -> None:
        await asyncio.to_thread(self.fs.pipe_file, key, data)

    async def move(self, src: str, dst: str, size: int) -> None:
        await asyncio.to_thread(self.fs.mv, src, dst)

    async def list(self, prefix: str) -> list[str]:
        if not await asyncio.to_thread(self.fs.exists, prefix):
            return []
        return [self._url(p) for p in await asyncio.to_thread(self.fs.find, prefix)]

    async def delete(self, keys: Sequence[str]) -> None:
        if keys:
            await asyncio.to_thread(self.fs.rm, list(keys))

    async def delete_prefix(self, prefix: str) -> None:
        if await asyncio.to_thread(self.fs.exists, prefix):
            await asyncio.to_thread(self.fs.rm, prefix, recursive=True)

    async def close(self) -> None:
        pass


def sink_for(dest: str, options: dict[str, Any]) -> Sink:
    """The sink for ``dest``; ``options`` are the read side's store keywords for its scheme."""
    scheme = dest.split("://", 1)[0].lower() if "://" in dest else ""
    if scheme in ("", "file"):
        return LocalSink()
    if scheme in ("s3", "s3a"):
        names = {"endpoint": "endpoint_url", "max_connections": "limit"}  # config -> S3Sink
        kept = ("region", "access_key_id", "secret_access_key", "session_token", "anonymous",
                "path_style", "connect_timeout", "read_timeout", "verify_ssl", "aws_profile",
                *names)
        config = given(parse_config("s3", options))
        return S3Sink(**{names.get(k, k): v for k, v in config.items() if k in kept})
    if scheme in ("http", "https"):
        raise CsupError("cannot write to http(s) URLs (HTTP has no upload protocol); write "
                        "to s3://, gs://, another fsspec URL or a local path",
                        path=redact_url(dest))
    protocol = "gcs" if scheme == "gs" else scheme
    return FsspecSink(protocol, options.get("storage_options"))
