# SPDX-License-Identifier: BSD-2-Clause
"""Link profiles in physical units: TOML tables, channels, whole profiles, timelines and traces,
and their translation into register values at a board's clock."""
