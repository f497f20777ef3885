# SPDX-License-Identifier: BSD-2-Clause
"""The lab console (``satemu serve``): an HTTP API and a web page over boxes, their live state
and link profiles. ``boxes``: each box's connection, poller and session; ``auth``: the token;
``app``: the FastAPI app; ``static/``: the page, served from the package."""
