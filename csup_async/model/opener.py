"""What ``open`` and ``open_dataset`` return: one awaitable opener for both.

``await csup_async.open(url)`` and ``async with csup_async.open(url) as r`` both work;
the context manager closes what it opened.  Using the opener as the opened object (a
forgotten ``await``) or in a plain ``with`` is a NotAwaitedError that says how to
call it, rather than an AttributeError from deep inside.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any, ClassVar, Generic, Protocol, TypeVar

from .errors import not_awaited

__all__ = ["Closable", "Opener"]


class Closable(Protocol):
    async def close(self) -> None: ...


T = TypeVar("T", bound=Closable)


class Opener(Generic[T]):
    """Awaitable, or an async context manager that closes; a subclass says how it opens
    (:meth:`_open`) and names its verbs (``verb``, ``sync_verb``) for the error."""

    verb: ClassVar[str]  # "open", "open_dataset"
    sync_verb: ClassVar[str]  # what to call without an event loop
    _opened: T | None = None

    async def _open(self) -> T:
        raise NotImplementedError

    async def _run(self) -> T:
        self._opened = await self._open()
        return self._opened

    def __await__(self) -> Generator[Any, None, T]:
        return self._run().__await__()

    async def __aenter__(self) -> T:
        return await self._run()

    async def __aexit__(self, *exc: object) -> None:
        if self._opened is not None:
            await self._opened.close()

    def __getattr__(self, name: str) -> Any:
        """An attribute of the opened object asked of the opener: ``await`` was forgotten."""
        if name.startswith("_"):  # private and protocol probes (IPython's _repr_html_...)
            raise AttributeError(name)
        raise not_awaited(self.verb, name, self.sync_verb)

    def __enter__(self) -> Any:
        raise not_awaited(self.verb, "__enter__ (a plain `with`)", self.sync_verb)

    def __exit__(self, *exc: object) -> None:
        return None
