"""Test-wide settings.

Under CI (``CI`` set) hypothesis is derandomized: every run draws the same examples, so a green
run on one machine is green on the next; locally it explores new examples each run.
``HYPOTHESIS_PROFILE=thorough`` runs ten times the examples of every property test (their
counts are set relative to the profile's ``max_examples``: ``tests/_properties.py``).
"""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, database=None)
settings.register_profile("thorough", max_examples=1000)
if os.environ.get("CI"):
    settings.load_profile("ci")
elif os.environ.get("HYPOTHESIS_PROFILE"):
    settings.load_profile(os.environ["HYPOTHESIS_PROFILE"])
