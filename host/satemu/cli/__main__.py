# SPDX-License-Identifier: BSD-2-Clause
"""``python -m satemu.cli``: the ``satemu`` command."""

import sys

from . import main

sys.exit(main())
