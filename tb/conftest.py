"""pytest hooks for the benches: the coverage summary at the end of a session."""
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))


def pytest_terminal_summary(terminalreporter):
    import coverage_report
    text = coverage_report.summary()
    if text:
        terminalreporter.write_line("")
        for line in text.splitlines():
            terminalreporter.write_line(line)
