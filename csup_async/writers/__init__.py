"""The write side: rows, Arrow and Python inputs encoded into CSUP files (:mod:`.writer`,
:mod:`.writing`), with the segment statistics a reader prunes by (:mod:`.segstats`)."""
