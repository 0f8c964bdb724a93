"""Hypothesis profile for the robustness tests, and a tally of the examples each property ran.

Profile ``qlinear-robustness`` (loaded here, so it applies to every ``@given`` of this session):
derandomized (examples are a fixed function of each test, so CI is reproducible and a failure
replays), ``max_examples`` 200 per property (``QLINEAR_HYPOTHESIS_EXAMPLES`` overrides it, e.g.
for a longer local fuzz run), no deadline (the first Triton-interpreted call of a shape is slow),
and no example database; failing examples are shown in the report, never written to
``.hypothesis/`` (no database, no patch files).

Every property calls ``_robust_common.tally(name)`` once per example; the session summary prints
how many examples each one ran, and with ``QLINEAR_ROBUSTNESS_COUNTS=<file>`` writes them as JSON
(the Triton-interpreted child process reports to its parent that way).
"""

from __future__ import annotations

import json
import os

import pytest
from hypothesis import HealthCheck, settings

import _robust_common

MIN_EXAMPLES = 200

settings.register_profile(
    "qlinear-robustness",
    max_examples=int(os.environ.get("QLINEAR_HYPOTHESIS_EXAMPLES", MIN_EXAMPLES)),
    derandomize=True,
    deadline=None,
    database=None,
    print_blob=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)
settings.load_profile("qlinear-robustness")


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_call(item):
    # Hypothesis' pytest plugin turns a failing example into a patch file under .hypothesis/;
    # the failure report already shows the example (and how to replay it), so write nothing.
    yield
    if hasattr(item, "_hypothesis_failing_examples"):
        del item._hypothesis_failing_examples


def pytest_terminal_summary(terminalreporter, exitstatus, config):
    counts = _robust_common.EXAMPLES
    if not counts:
        return
    terminalreporter.section("robustness: examples per property")
    for name in sorted(counts):
        terminalreporter.write_line(f"{counts[name]:6d}  {name}")
    terminalreporter.write_line(f"{len(counts)} properties, {sum(counts.values())} examples")
    path = os.environ.get("QLINEAR_ROBUSTNESS_COUNTS")
    if path:
        with open(path, "w", encoding="utf-8") as f:
            json.dump(dict(counts), f, indent=1, sort_keys=True)
