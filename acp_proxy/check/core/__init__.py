"""The conformance checker: frames of one capture in, findings out (sans-I/O).

What belongs here: the checker (:mod:`.checker`), which hands each frame to one module per
area — framing and JSON (:mod:`.framing`), JSON-RPC pairing and response times
(:mod:`.rpc`), the bundled ACP JSON Schemas (:mod:`.validate`, :mod:`.schemas`),
``initialize`` and sessions (:mod:`.lifecycle`, :mod:`.sessions`), capabilities, prompt
turns, tool calls with terminals and permissions — over the state they share
(:mod:`.context`); the rule table (:mod:`.rules`), what a check produces
(:mod:`.findings`) and the report formats (:mod:`.report`). Reading captures and following a
live one are the rest of :mod:`acp_proxy.check`; ``tests/test_layers.py`` keeps this
package free of I/O.
"""
