"""Masking of S3 credentials in the log records of botocore and its neighbours.

botocore logs whole signed requests (the Authorization header, presigned query
strings) at DEBUG through many child loggers, and a logger's filters do not see
records propagated from its children, so the mask has to sit in the process's
log record factory.  Replacing that factory is a process-wide act, so it is not
done on import: :func:`install_log_mask` is called where an S3 signer or client is
first made (and is idempotent), chaining to whatever factory was there before.
"""

from __future__ import annotations

import logging
import re
import threading
from typing import Any

#: key=value / key: value pairs of a signed request whose value is a secret or a signature
SIGNED_PARTS = re.compile(r"(Credential|Signature|X-Amz-Security-Token|X-Amz-Signature|"
                          r"X-Amz-Credential)[=:]\s*[^,&\s'\"]+", re.I)

#: the loggers whose records are masked (prefixes of logger names)
MASKED_LOGGERS = ("botocore", "aiobotocore", "urllib3", "s3transfer")

_lock = threading.Lock()
_installed = False
_secrets: set[str] = set()  # secret keys and session tokens a signer was made with


def mask(text: str) -> str:
    """``text`` with signed-request parts and known secret values replaced by ``[redacted]``."""
    masked = SIGNED_PARTS.sub(r"\1[redacted]", text)
    for secret in tuple(_secrets):
        if secret in masked:
            masked = masked.replace(secret, "[redacted]")
    return masked


def install_log_mask(*secrets: str | None) -> None:
    """Mask the records of :data:`MASKED_LOGGERS` from now on (once per process), and
    ``secrets`` (a secret access key, a session token) wherever they appear in them."""
    global _installed
    with _lock:
        _secrets.update(s for s in secrets if s and len(s) >= 8)
        if _installed:
            return
        previous = logging.getLogRecordFactory()

        def factory(*args: Any, **kwargs: Any) -> logging.LogRecord:
            record = previous(*args, **kwargs)
            if record.name.startswith(MASKED_LOGGERS):
                try:
                    text = record.getMessage()
                except Exception:  # a record whose args do not format: leave it alone
                    return record
                masked = mask(text)
                if masked != text:
                    record.msg, record.args = masked, None
            return record

        logging.setLogRecordFactory(factory)
        _installed = True
