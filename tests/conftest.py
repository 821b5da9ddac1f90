"""Settings every test shares.

Hypothesis: no per-example deadline and no too-slow health check, in every test module. Its
defaults (200 ms per example) are a timing assumption, and CI runs on shared, loaded machines
where one slow example is not a failure of the code under test.
"""

from hypothesis import HealthCheck, settings

settings.register_profile(
    "shared-host",
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("shared-host")
