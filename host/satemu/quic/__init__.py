# SPDX-License-Identifier: BSD-2-Clause
"""QUIC endpoints that run in virtual time across the emulated link, and their Ethernet framing."""
