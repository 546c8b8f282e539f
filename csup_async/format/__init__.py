"""The bytes of the formats and their metadata, with no I/O: the CSUP trailer and reassembly
section (:mod:`.csup`, :mod:`.meta`, :mod:`.colvalue`), the BSUP codec (:mod:`.bsup`), VNG
(:mod:`.vng`) and SuperDB's header-layout CSUP (:mod:`.superdb`)."""
