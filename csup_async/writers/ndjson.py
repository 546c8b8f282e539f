"""NDJSON into CSUP without a Python object per value.

``json.loads`` builds a dict, a str, an int for every value of every line, and
for a log file that is most of a conversion's time.  Here a C parser
(``csup_async/writers/_wkernels.c``) turns each chunk of
:data:`~csup_async.writers.pyrows.CHUNK_ROWS`
lines into a token tape, and :func:`csup_async.writers.tape.write_tape` builds from it
the very columns :mod:`csup_async.writers.pyrows` builds from Python values: same
chunks, same fused types, same bytes.  The parser answers only where it is
sure to agree with ``json.loads`` (see the C file's contract); anything else
goes through the reference path, :func:`csup_async.writers.inputs.json_lines` and
:func:`csup_async.writers.pyrows.write_chunks`, from that chunk on or for that chunk:

- a chunk holding a value only Python decides (an int beyond int64, ``NaN``, a
  lone surrogate, a key twice in an object, deep nesting): that chunk's lines;
- a line the parser does not take (invalid JSON, a line break Python sees and
  it does not): from that chunk to the end (where the reference raises its
  error with the line number, or reads what it reads);
- a file of one value (a JSON document, maybe an array of rows): all of it,
  as :func:`csup_async.writers.inputs.read_json` reads it.

The file is read in blocks of :data:`BLOCK` bytes, so memory stays bounded by a
block, a chunk's tape and the writer's own buffers.  Without the C extension,
or with ``fuse=False`` (exact types, a shape per row), the reference path is
taken for the whole file.
"""

from __future__ import annotations

import os
import queue
import threading
from collections.abc import Callable, Iterator
from types import ModuleType
from typing import Any

from ..model.types import Type
from .inputs import json_lines, read_json
from .pyrows import CHUNK_ROWS, write_chunks, write_rows
from .tape import Tape, shred_tape, write_tape
from .writer import Writer

__all__ = ["write_ndjson", "native_available", "BLOCK"]

#: Bytes read from the file at a time.
BLOCK = 4 << 20

_OK, _PYTHON, _STOP, _MORE = range(4)


def _load() -> ModuleType | None:
    if os.environ.get("CSUP_ASYNC_NATIVE", "1").strip().lower() in ("0", "false", "no", "off"):
        return None
    try:
        from . import _wkernels
    except ImportError:
        return None
    return _wkernels


#: The C parser, or None (tests swap it).
_K = _load()


def native_available() -> bool:
    """Whether JSON lines are parsed in C (built, and not turned off by the env var)."""
    return _K is not None


def write_ndjson(w: Writer, path: str, *, fuse: bool = True, infer_times: bool = False,
                 on_rows: Callable[[int], None] | None = None) -> None:
    """Write the values of the JSON/NDJSON file ``path`` through ``w``: the same rows and
    bytes as ``write_rows(w, read_json(path), fuse, infer_times)``.  ``on_rows`` is
    called with the rows written so far, after each chunk.

    The file is read and parsed one chunk ahead on a helper thread (the C parser
    releases the GIL), so parsing overlaps the shredding of the chunk before."""
    k = _K
    if k is None or not fuse:
        write_rows(w, _counted(read_json(path), on_rows), fuse, infer_times)
        return
    open_types: dict[int, Type] = {}
    for event in _ahead(_chunks(k, path, infer_times)):
        what = event[0]
        if what == "whole":  # one JSON document, or a first line only the reference reads
            write_rows(w, _counted(read_json(path), on_rows), True, infer_times)
            return
        if what == "rest":  # the reference from here on, line numbers kept
            _, rest, line = event
            write_chunks(w, _counted(json_lines(rest.decode("utf-8"), path, line), on_rows,
                                     w.rows), open_types, infer_times)
            return
        _, shredded, chunk, line = event

        def python_rows(chunk: bytes = chunk, line: int = line) -> list[Any]:
            return list(json_lines(chunk.decode("utf-8"), path, line))

        write_tape(w, shredded, open_types, infer_times, python_rows)
        if on_rows is not None:
            on_rows(w.rows)


def _chunks(k: ModuleType, path: str, infer_times: bool) -> Iterator[tuple[Any, ...]]:
    """The file's chunks as ("chunk", shredded or None, the chunk's bytes, its first line
    number), then maybe ("rest", the bytes from there on, line) or, first,
    ("whole",).  Parsing and shredding run here, on the helper thread; only fusing
    the chunk's types into the file's (which is in order) is left to the writer."""
    with open(path, "rb") as f:
        buf = bytearray()
        pos = 0
        eof = False
        line = 1  # the line number of buf[pos]
        first = True
        while True:
            while not eof and buf.count(b"\n", pos) < CHUNK_ROWS:
                eof = not _more(f, buf, pos)
                pos = 0
            status, end, rows, lines, *parts = k.tape(buf, pos, CHUNK_ROWS, eof)
            if status == _MORE:  # blank lines: the chunk's rows go on past the buffer
                eof = not _more(f, buf, pos)
                pos = 0
                continue
            if first and (status == _STOP or (eof and rows <= 1)):
                yield ("whole",)
                return
            first = False
            if status == _STOP:
                yield ("rest", bytes(buf[pos:]) + f.read(), line)
                return
            if rows == 0:
                return
            shredded = shred_tape(Tape(*parts), infer_times) if status == _OK else None
            yield ("chunk", shredded, bytes(buf[pos:end]), line)
            line += lines
            pos = end


def _ahead(items: Iterator[tuple[Any, ...]]) -> Iterator[tuple[Any, ...]]:
    """``items``, each made on a helper thread while the one before is used; the thread
    stops when the consumer does (an error, a generator closed early)."""
    q: queue.Queue[tuple[bool, Any]] = queue.Queue(maxsize=1)
    stop = threading.Event()

    def produce() -> None:
        try:
            for item in items:
                while not stop.is_set():
                    try:
                        q.put((True, item), timeout=0.1)
                        break
                    except queue.Full:
                        continue
                if stop.is_set():
                    return
            q.put((False, None))
        except BaseException as e:  # handed to the consumer, raised there
            q.put((False, e))
        finally:
            items.close()  # type: ignore[attr-defined]  # the file, now

    t = threading.Thread(target=produce, name="csup-ndjson-parse", daemon=True)
    t.start()
    try:
        while True:
            ok, item = q.get()
            if not ok:
                if item is not None:
                    raise item
                return
            yield item
    finally:
        stop.set()
        while t.is_alive():  # unblock a producer waiting to hand over its last item
            try:
                q.get_nowait()
            except queue.Empty:
                t.join(0.05)


def _more(f: Any, buf: bytearray, pos: int) -> bool:
    """Drop ``buf[:pos]`` and append the next block; False at the end of the file."""
    if pos:
        del buf[:pos]
    block = f.read(BLOCK)
    if not block:
        return False
    buf += block
    return True


def _counted(values: Any, on_rows: Callable[[int], None] | None, base: int = 0) -> Any:
    if on_rows is None:
        return values

    def gen() -> Any:
        for i, v in enumerate(values, base + 1):
            yield v
            if i % 1000 == 0:
                on_rows(i)

    return gen()
