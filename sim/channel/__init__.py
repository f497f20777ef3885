# SPDX-License-Identifier: BSD-2-Clause
"""One channel in Verilator, checked by cocotb against the channel model: its simulation top
(``top``), the cocotb bench (``bench``) and the scenarios it runs (``scenarios``,
``bod_scenarios``), which tests/gateware/test_channel.py and test_channel_bod.py run through
``sim.run``."""
