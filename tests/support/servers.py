"""Real servers on 127.0.0.1 for the store tests, each started and stopped by the tests.

- ``MotoS3``: moto's S3 server in a thread (``ThreadedMotoServer``), seeded with boto3.
- ``GcsEmulator``: gcp-storage-emulator as a subprocess, in memory.
- ``Nginx`` and ``RangeServer`` (the aiohttp range server that injects faults): the
  benchmarks start them too, so they live in ``bench/rangeservers.py`` (benchmarks
  import only the package and their own folder) and are re-exported here.

Nothing here talks to anything but 127.0.0.1.
"""

from __future__ import annotations

import json
import logging
import subprocess
import sys
import urllib.request
from typing import Any
from urllib.parse import quote

from bench.net import HOST, free_port, stop_process, wait_for_port
from bench.rangeservers import Fault, Nginx, RangeServer, nginx_binary

__all__ = ["HOST", "Fault", "GcsEmulator", "MotoS3", "MotoS3Process", "Nginx", "RangeServer",
           "free_port", "nginx_binary", "stop_process", "wait_for_port"]


# ------------------------------------------------------------------ moto ---
class MotoS3:
    """moto's S3 server on a free port; fake credentials for the tests only."""

    ACCESS_KEY = "csup-test-access-key"
    SECRET_KEY = "csup-test-secret-key"
    REGION = "us-east-1"
    BUCKET = "csup-test"

    def __init__(self) -> None:
        from moto.server import ThreadedMotoServer

        self._server = ThreadedMotoServer(ip_address=HOST, port=0, verbose=False)
        self.endpoint = ""
        self.client: Any = None  # the boto3 client that seeds the bucket

    def start(self) -> MotoS3:
        import boto3

        logging.getLogger("werkzeug").setLevel(logging.ERROR)  # one line per request
        self._server.start()
        host, port = self._server.get_host_and_port()
        self.endpoint = f"http://{host}:{port}"
        self.client = boto3.client(
            "s3", endpoint_url=self.endpoint, region_name=self.REGION,
            aws_access_key_id=self.ACCESS_KEY, aws_secret_access_key=self.SECRET_KEY)
        self.client.create_bucket(Bucket=self.BUCKET)
        return self

    def stop(self) -> None:
        self._server.stop()

    def put(self, key: str, data: bytes) -> str:
        self.client.put_object(Bucket=self.BUCKET, Key=key, Body=data)
        return f"{self.BUCKET}/{key}"

    def delete(self, key: str) -> None:
        self.client.delete_object(Bucket=self.BUCKET, Key=key)

    def store_options(self) -> dict[str, Any]:
        return {"endpoint_url": self.endpoint, "region": self.REGION,
                "access_key_id": self.ACCESS_KEY, "secret_access_key": self.SECRET_KEY}


class MotoS3Process(MotoS3):
    """moto's S3 server in a process of its own: its own buckets, where two
    ``MotoS3`` of one process share moto's state (two endpoints holding different
    objects under one bucket and key)."""

    def __init__(self) -> None:
        self.port = free_port()
        self.endpoint = f"http://{HOST}:{self.port}"
        self.client = None
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> MotoS3Process:
        import boto3

        self._proc = subprocess.Popen(
            [sys.executable, "-m", "moto.server", "-H", HOST, "-p", str(self.port)],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for_port(self.port, proc=self._proc, what="moto server")
        self.client = boto3.client(
            "s3", endpoint_url=self.endpoint, region_name=self.REGION,
            aws_access_key_id=self.ACCESS_KEY, aws_secret_access_key=self.SECRET_KEY)
        self.client.create_bucket(Bucket=self.BUCKET)
        return self

    def stop(self) -> None:
        stop_process(self._proc)


# ------------------------------------------------------ gcs emulator ---
class GcsEmulator:
    """gcp-storage-emulator in memory, with one bucket."""

    BUCKET = "csup-test"

    def __init__(self) -> None:
        self.port = free_port()
        self.host = f"{HOST}:{self.port}"
        self.endpoint = f"http://{self.host}"
        self._proc: subprocess.Popen[bytes] | None = None

    def start(self) -> GcsEmulator:
        self._proc = subprocess.Popen(
            [sys.executable, "-m", "gcp_storage_emulator", "start", f"--host={HOST}",
             f"--port={self.port}", "--in-memory", f"--default-bucket={self.BUCKET}", "-q"],
            stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
        wait_for_port(self.port, proc=self._proc, what="gcp-storage-emulator")
        return self

    def stop(self) -> None:
        stop_process(self._proc)

    def put(self, name: str, data: bytes) -> str:
        url = (f"{self.endpoint}/upload/storage/v1/b/{self.BUCKET}/o?uploadType=media"
               f"&name={quote(name, safe='')}")
        req = urllib.request.Request(url, data=data, method="POST",
                                     headers={"Content-Type": "application/octet-stream"})
        with urllib.request.urlopen(req, timeout=10) as r:
            json.load(r)
        return f"{self.BUCKET}/{name}"

    def delete(self, name: str) -> None:
        url = f"{self.endpoint}/storage/v1/b/{self.BUCKET}/o/{quote(name, safe='')}"
        with urllib.request.urlopen(urllib.request.Request(url, method="DELETE"), timeout=10):
            pass
