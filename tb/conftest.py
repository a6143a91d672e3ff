"""pytest hooks for the benches: the coverage summary at the end of a session
(tb/coverage_report.py), collected across pytest-xdist workers: each worker
hands its records to the controller in ``workeroutput`` when it finishes,
the controller merges them and prints the summary."""
import json
import sys
from pathlib import Path

import pytest

sys.path.insert(0, str(Path(__file__).parent))

_KEY = "fsa_coverage_records"


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:                  # an xdist worker
        import coverage_report
        workeroutput[_KEY] = json.dumps(coverage_report.RECORDS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """xdist controller: a worker finished; take its records."""
    data = getattr(node, "workeroutput", {}).get(_KEY)
    if data:
        import coverage_report
        coverage_report.RECORDS.extend(json.loads(data))


def pytest_terminal_summary(terminalreporter):
    import coverage_report
    text = coverage_report.summary()
    if text:
        terminalreporter.write_line("")
        for line in text.splitlines():
            terminalreporter.write_line(line)
