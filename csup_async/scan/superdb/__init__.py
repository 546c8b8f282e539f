"""Reading the columns of SuperDB (header-layout) CSUP files: projection (:mod:`.columns`,
:mod:`.fastcols`), values (:mod:`.vectors`), pruning by statistics (:mod:`.pruning`)."""
