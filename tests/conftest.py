"""Test-wide settings.

Under CI (``CI`` set) hypothesis is derandomized: every run draws the same examples, so a green
run on one machine is green on the next; locally it explores new examples each run.
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None)
if os.environ.get("CI"):
    settings.load_profile("ci")
