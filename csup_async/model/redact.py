"""Keep secrets out of messages: URLs lose their userinfo, query string and fragment.

Signed URLs carry their credentials in the query string (``X-Amz-Signature``,
``X-Goog-Signature``, SAS tokens, ``?token=``) and some users put
``user:password@`` in a URL.  Errors, logs and reprs are copied into tickets
and chat, so every URL that reaches one goes through :func:`redact_url` first,
and text produced by other libraries (which may quote a URL) through
:func:`redact_text`.  The host and path stay: they are what a user needs to
find the object.
"""

from __future__ import annotations

import re
from urllib.parse import urlsplit, urlunsplit

__all__ = ["redact_text", "redact_url"]

_HIDDEN = "***"
_URL_IN_TEXT = re.compile(r"""[A-Za-z][A-Za-z0-9+.-]*://[^\s'"<>]+""")


def redact_url(url: str) -> str:
    """``url`` without userinfo, query or fragment (marked, so their presence shows)."""
    if "://" not in url:
        # A plain path or "bucket/key": a query-like tail is still hidden.
        head, sep, _ = url.partition("?")
        return head + ("?" + _HIDDEN if sep else "")
    try:
        parts = urlsplit(url)
        netloc = parts.netloc
    except ValueError:  # e.g. a malformed IPv6 host: keep only the scheme
        return url.split("://", 1)[0] + "://" + _HIDDEN
    if "@" in netloc:
        netloc = _HIDDEN + "@" + netloc.rsplit("@", 1)[1]
    query = _HIDDEN if parts.query else ""
    fragment = _HIDDEN if parts.fragment else ""
    return urlunsplit((parts.scheme, netloc, parts.path, query, fragment))


def redact_text(text: str) -> str:
    """``text`` with every URL in it redacted (for messages of other libraries)."""
    return _URL_IN_TEXT.sub(lambda m: redact_url(m.group(0)), text)
