import os

from hypothesis import HealthCheck, settings

# Torch calls make examples slow and uneven: no per-example deadline. In CI the examples are drawn
# from a fixed seed so a landing never depends on luck; locally they are fresh each run.
settings.register_profile("ci", deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")
