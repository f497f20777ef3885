# SPDX-License-Identifier: BSD-2-Clause
"""satemu host package: reference models, register map and (later) the host tool."""

__version__ = "0.1.0"
