"""The relays' sans-I/O rules: who may connect (:mod:`.admission`) and how many at once
(:mod:`.capacity`).

Values in, a decision out: the listeners read requests with their own libraries
(``websockets``, ``h11``, ``h2``, the standard library's HTTP server for the web inspector)
and hand admission what it reads as plain values. ``tests/test_layers.py`` keeps this
package free of I/O.
"""
