# SPDX-License-Identifier: BSD-2-Clause
"""``python -m satemu.cli``: the ``satemu`` command."""

import sys

from satemu.cli import main

sys.exit(main())
