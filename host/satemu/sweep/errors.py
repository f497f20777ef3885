# SPDX-License-Identifier: BSD-2-Clause
"""The sweep's one-line error."""


class SweepError(ValueError):
    """A sweep that cannot be run as given: a ``--set``, ``--engine``, ``--cc``, ``--policies``
    or ``--dask`` value, or a point whose profile or settings its stacks cannot take. The
    message is one line and names the option."""
