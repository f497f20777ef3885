# SPDX-License-Identifier: BSD-2-Clause
"""Real-time QUIC transfers between two network namespaces, across a real link, with captures."""

# The virtual-time co-simulation (satemu.quic.engine) drives sans-I/O endpoints in lock-step with the
# simulated board. This package does the same transfer in real time, for a real board (or any
# link between two interfaces of this host) and for external QUIC implementations:
#
#   client namespace (10.0.0.2/24)                          server namespace (10.0.0.1/24)
#     fetch (or --client-cmd) -- client_if ==== link ==== server_if -- serve (or --server-cmd)
#     capture on client_if                                   capture on server_if
#
# With a board, client_if is cabled to port A (the terminal side) and server_if to port B (the
# gateway side): forward is server -> client, return is client -> server, as in satemu.quic.cosim.
#
# runner: the run (run_realtime); supervise: its children and its clean-up; captures: the
# Transfer built from the captures; command (``python -m satemu.quic.realtime``): the children.

from satemu.quic.realtime.captures import F_CLK, build_transfer
from satemu.quic.realtime.command import build_parser, main
from satemu.quic.realtime.runner import TEMPLATE_FIELDS, _template, run_realtime

__all__ = ["build_transfer", "run_realtime", "main", "F_CLK", "TEMPLATE_FIELDS"]
