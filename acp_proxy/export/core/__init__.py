"""The export formats that need no I/O: a reconstruction or frames in, text out.

What belongs here: a terminal as an asciicast (:mod:`.asciicast`), a session's file
changes as a patch (:mod:`.patch`) and redaction (:mod:`.redact`). The formats that read
the database as they write are the rest of :mod:`acp_proxy.export`;
``tests/test_layers.py`` keeps this package free of I/O.
"""
