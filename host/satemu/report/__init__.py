# SPDX-License-Identifier: BSD-2-Clause
"""Reports of QUIC transfers: metrics, result files, plots, tables and a progress line."""
