# SPDX-License-Identifier: BSD-2-Clause
"""Verilator harnesses: simulation tops and the cached build of their models."""
