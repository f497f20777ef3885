# SPDX-License-Identifier: BSD-2-Clause
"""Board and SoC targets (LiteX)."""
