"""One object's readers: opening a URL (:mod:`.opening`), the CSUP reader (:mod:`.reader`),
and the readers of files without a column index (:mod:`.wholeobject`, :mod:`.bsup`,
:mod:`.superdb`), told apart by :mod:`.detect`."""
