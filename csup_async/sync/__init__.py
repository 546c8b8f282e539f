"""The synchronous face of the library, over the same async core (see :mod:`.facade`)."""

from ..arrays.arrowschema import ArrowSchema
from .facade import (
    BatchStream,
    SyncDataset,
    SyncReader,
    open_dataset_sync,
    open_sync,
    read,
)
from .loop import io_loop, run

__all__ = ["ArrowSchema", "BatchStream", "SyncDataset", "SyncReader", "io_loop",
           "open_dataset_sync", "open_sync", "read", "run"]
