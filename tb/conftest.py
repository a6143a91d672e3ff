"""pytest hooks for the benches: the coverage summary at the end of a session
(tb/common/coverage_report.py), collected across pytest-xdist workers: each
worker hands its records to the controller in ``workeroutput`` when it
finishes, the controller merges them and prints the summary."""
import json

import pytest

from tb.common import coverage_report

_KEY = "fsa_coverage_records"


def pytest_sessionfinish(session):
    workeroutput = getattr(session.config, "workeroutput", None)
    if workeroutput is not None:                  # an xdist worker
        workeroutput[_KEY] = json.dumps(coverage_report.RECORDS)


@pytest.hookimpl(optionalhook=True)
def pytest_testnodedown(node, error):
    """xdist controller: a worker finished; take its records."""
    data = getattr(node, "workeroutput", {}).get(_KEY)
    if data:
        coverage_report.RECORDS.extend(json.loads(data))


def pytest_terminal_summary(terminalreporter):
    text = coverage_report.summary()
    if text:
        terminalreporter.write_line("")
        for line in text.splitlines():
            terminalreporter.write_line(line)
