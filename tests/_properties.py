"""Shared settings of the property tests (``tests/test_properties_*.py``)."""

from hypothesis import HealthCheck, settings


def examples(n: int) -> int:
    """``n`` examples under the default profile's 100, scaled with the loaded profile's
    (``HYPOTHESIS_PROFILE=thorough``: ten times as many; ``tests/conftest.py``)."""
    return max(1, n * settings.default.max_examples // 100)


def properties(n: int) -> settings:
    """Settings of a property test with ``n`` examples at the default profile, no deadline
    (the machine is shared: a slow example is not a failure)."""
    return settings(
        max_examples=examples(n), deadline=None, suppress_health_check=[HealthCheck.too_slow]
    )
