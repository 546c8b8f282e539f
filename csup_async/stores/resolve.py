"""Pick a store from a URL's scheme."""

from __future__ import annotations

from urllib.parse import urlsplit

from ..errors import CsupError
from .base import Store
from .local import LocalStore


def store_for(url: str, **options: object) -> tuple[Store, str]:
    scheme = urlsplit(url).scheme if "://" in url else ""
    if scheme in ("", "file"):
        return LocalStore(), url
    raise CsupError(f"no store for scheme {scheme!r} yet", path=url)
