"""``python -m acp_proxy``: the ``acp-proxy`` command."""

from acp_proxy.cli import main

main(prog_name="acp-proxy")
