# SPDX-License-Identifier: BSD-2-Clause
"""The box, real or simulated, from the host: the device API over the UART, flashing, and what a
box recorded (BoD superframes, the frame log, port captures) in physical units and pcapng."""
