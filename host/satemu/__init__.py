# SPDX-License-Identifier: BSD-2-Clause
"""satemu's host package, in layers, each importing only from those before it:

``base`` (units, parameter types, register map, protocol and record layouts, board registry,
validator) → ``model`` (the frame path's reference models) → ``link`` (profiles, timelines,
traces) → ``box`` (the device API, flashing, reading what a box recorded) → ``quic`` (engines,
the co-simulation, the stacks, real time) → ``report`` → ``sweep`` → ``cli``.
``tests/host/test_layers.py`` holds the package to that order."""

__version__ = "0.1.0"
