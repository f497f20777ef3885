# SPDX-License-Identifier: BSD-2-Clause
"""Reference models of the frame path, each the contract of a gateware block (``channel`` of
``satemu_gw.channel``, ``bod`` of the BoD allocator and slots, ...) and ``board``, the two
channels between two ports: the model engine."""
