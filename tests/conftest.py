import os

from hypothesis import HealthCheck, settings

# Torch calls make examples slow and uneven: no per-example deadline. In CI the examples are drawn
# from a fixed seed so a landing never depends on luck; locally they are fresh each run.
settings.register_profile("ci", deadline=None, derandomize=True, suppress_health_check=[HealthCheck.too_slow])
settings.register_profile("dev", deadline=None, suppress_health_check=[HealthCheck.too_slow])
settings.load_profile("ci" if os.environ.get("CI") else "dev")


def pytest_terminal_summary(terminalreporter):
    """Print the browser test's line per notebook (tests/test_browser.py), also when it ran on an xdist worker."""
    lines = [
        value
        for reports in terminalreporter.stats.values()
        for report in reports
        if getattr(report, "when", None) == "call"
        for name, value in getattr(report, "user_properties", ())
        if name == "browser_summary"
    ]
    if lines:
        terminalreporter.section("notebooks in JupyterLab (chromium); screenshots in test-artifacts/browser/")
        for line in sorted(lines):
            terminalreporter.write_line(line)
