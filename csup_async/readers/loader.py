"""The loader: one object's open, and the reader its bytes call for.

A :class:`~.reader.Reader` reads the tail and looks for the CSUP trailer; what it finds
decides the kind: SuperDB's header layout (:class:`~.detect.HeaderLayout`, read by
:mod:`.superdb`), a BSUP stream (no trailer, read whole by :mod:`.bsup`), or the CSUP
trailer itself.  The reader of the other kind is a new object made alike
(:meth:`~.reader.Reader.successor`), so no reader ever changes its class.
"""

from __future__ import annotations

from collections.abc import Awaitable

from ..model.errors import FormatError
from ..model.options import OpenOptions
from ..stores import Store, TailRead
from .detect import HeaderLayout
from .reader import Reader

__all__ = ["load_reader"]


async def load_reader(store: Store, key: str, *, owns_store: bool,
                      options: OpenOptions,
                      pending: Awaitable[TailRead] | None = None) -> Reader:
    """The loaded reader of the object at ``key`` (``pending``: its tail read, already
    sent); the store is closed on failure when ``owns_store``."""
    try:
        reader = Reader(store, key, owns_store=owns_store, options=options)
    except BaseException:
        if owns_store:
            await store.close()
        raise
    # the other kinds' modules are imported only for an object of their kind: the first
    # open of a CSUP file does not pay for them
    try:
        try:
            await reader.load(pending)
        except HeaderLayout as found:  # a SuperDB file
            from .superdb import to_header_layout

            return await to_header_layout(reader, found.tail, found.t0, found.head)
        except FormatError:  # no trailer: a BSUP stream is read whole, as its kind
            from .bsup import to_bsup

            bsup = await to_bsup(reader)
            if bsup is None:
                raise
            return bsup
    except BaseException:
        await reader.close()  # the store too, unless a successor took it (and closed it)
        raise
    return reader
