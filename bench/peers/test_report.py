"""What `make bench-peers` does to docs/benchmarks.md: report.py --into replaces only its own part."""

import os
import sys

import pytest

sys.path.insert(0, os.path.dirname(__file__))
import report  # noqa: E402

REPORT = "## Against the field\n\n### a. enqueue\n\n| t |\n\n```\n# not a heading\nnode x\n```\n"


def doc(middle):
    return ("# Benchmarks\n\n## Results\n\nhand-written before\n\n" + report.BEGIN_MARK + "\n" +
            middle + report.END_MARK + "\n\n#### Reading it honestly\n\nhand-written after\n")


def test_the_report_replaces_what_was_between_the_markers_and_nothing_else():
    out = report.into(doc("### old tables\n\nold figures\n"), REPORT)
    assert "old figures" not in out
    assert out.startswith("# Benchmarks\n\n## Results\n\nhand-written before\n\n")
    assert out.endswith(report.END_MARK + "\n\n#### Reading it honestly\n\nhand-written after\n")
    # One level deeper than on stdout: the section sits under "## Results".
    assert "\n### Against the field\n" in out
    assert "\n#### a. enqueue\n" in out
    assert "\n# not a heading\n" in out  # inside a code block: left as it is


def test_writing_twice_gives_the_same_document():
    once = report.into(doc("x\n"), REPORT)
    assert report.into(once, REPORT) == once


@pytest.mark.parametrize("text", [
    "# Benchmarks\n\nno markers at all\n",
    report.END_MARK + "\n" + report.BEGIN_MARK + "\n",
    doc("") + report.BEGIN_MARK + "\n",
])
def test_a_document_without_one_pair_of_markers_in_order_is_refused(text):
    with pytest.raises(ValueError):
        report.into(text, REPORT)
