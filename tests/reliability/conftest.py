# SPDX-License-Identifier: MIT
"""The reliability tests' fixtures: the integration tests' own, via relutil (a module of another
name, so that this directory and tests/integ can run in one pytest session)."""
from relutil import daemon, daemons, figures, tmp  # noqa: F401  (pytest fixtures)
