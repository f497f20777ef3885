# SPDX-License-Identifier: BSD-2-Clause
"""satemu gateware: Amaranth 0.5 cores of the link channel."""
