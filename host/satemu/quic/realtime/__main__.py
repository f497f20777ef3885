# SPDX-License-Identifier: BSD-2-Clause
"""python -m satemu.quic.realtime: a real-time run's serve, fetch or capture child."""

import sys

from satemu.quic.realtime.command import main

sys.exit(main())
