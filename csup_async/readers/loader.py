"""The loader: one object's open, and the reader its bytes call for.

A :class:`~.reader.Reader` reads the tail and looks for the CSUP trailer; what it finds
decides the kind: SuperDB's header layout (:class:`~.detect.HeaderLayout`, read by
:mod:`.superdb`), a BSUP stream (no trailer, read whole by :mod:`.bsup`), or the CSUP
trailer itself.  The reader of the other kind is a new object made alike
(:meth:`~.reader.Reader.successor`), so no reader ever changes its class.
"""

from __future__ import annotations

from collections.abc import Awaitable
from typing import Any

from ..model.errors import FormatError
from ..model.options import OpenOptions
from ..stores import Store, TailRead
from .detect import HeaderLayout
from .headhint import drop_head, remember
from .openhint import drop
from .openhint import remember as remember_file
from .reader import Reader

__all__ = ["load_reader"]


async def load_reader(store: Store, key: str, *, owns_store: bool,
                      options: OpenOptions,
                      pending: Awaitable[TailRead] | None = None,
                      head: Awaitable[TailRead | None] | None = None,
                      recalled: Any = None) -> Reader:
    """The loaded reader of the object at ``key`` (``pending``: its tail read, already
    sent; ``head``: a speculative head read sent with it, used by a SuperDB v23 file;
    ``recalled``: the reads the last open of this v23 file made, :mod:`.openhint`);
    the store is closed on failure when ``owns_store``."""
    try:
        reader = Reader(store, key, owns_store=owns_store, options=options)
    except BaseException:
        if owns_store:
            await store.close()
        raise
    # the other kinds' modules are imported only for an object of their kind: the first
    # open of a CSUP file does not pay for them
    reader.speculative_head = head  # (detect.probe may use it: a v14/v16 file)
    reader.recalled = recalled
    try:
        try:
            await reader.load(pending)
        except HeaderLayout as found:  # a SuperDB file
            from .superdb import to_header_layout

            unused = head if reader.speculative_head is not None else None
            return await to_header_layout(reader, found.tail, found.t0, found.head,
                                          speculative=unused, recalled=recalled)
        except FormatError:  # no trailer: a BSUP stream is read whole, as its kind
            from .bsup import to_bsup

            await _no_head(store, key, head, recalled)
            bsup = await to_bsup(reader)
            if bsup is None:
                raise
            return bsup
    except BaseException:
        await reader.close()  # the store too, unless a successor took it (and closed it)
        await drop(recalled)
        raise
    await _no_head(store, key, head, recalled)
    return reader


async def _no_head(store: Store, key: str, head: Awaitable[Any] | None,
                   recalled: Any = None) -> None:
    """Not a v23 file: no head read next time from this place, no recalled reads of this
    file, and this open's dropped."""
    remember(store, key, False)
    if recalled is not None:
        remember_file(store, key, 0, None, ())  # (forgotten)
    await drop_head(head)
    await drop(recalled)
