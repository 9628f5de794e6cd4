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


PEERS_JSON = os.path.join(os.path.dirname(__file__), "results.json")


def test_latency_compares_sent_to_leased_and_gives_no_ratio_to_a_ready_to_leased_of_zero(tmp_path):
    """On redis-pg a task is leased before its 202 is sent, so ready→leased is clamped at 0: its
    rows must not claim a ratio, and the sent→leased rows carry the comparison instead."""
    with open(PEERS_JSON) as f:
        peers = report.json.load(f)
    best_p50 = min(r["median"] for r in peers["results"]
                   if r["id"] == "c.p50" and r["peer"] in ("bullmq", "asynq"))
    figures = tmp_path / "redis-pg.json"
    figures.write_text(report.json.dumps(
        {"c.p50": 0, "c.p99": 0, "c.max": 1.7, "c.e2e50": 3.6, "c.e2e99": 10.7, "c.e2emax": 30}))
    text = report.render(peers, report.load_madeira(f"redis-pg={figures}"), 2.0)
    p50 = [line for line in text.splitlines() if line.startswith("| p50 | **Madeira")]
    assert len(p50) == 2, p50
    ready, sent = p50
    assert "ready→leased" in ready and "no ratio" in ready and "| — |" in ready, ready
    assert "sent→leased" in sent and f"| {best_p50 / 3.6:.2f}× |" in sent, sent
    max_rows = [line for line in text.splitlines() if line.startswith("| max | **Madeira")]
    assert any("sent→leased" in line and "**30.0**" in line for line in max_rows), max_rows


def test_a_store_answered_before_its_leases_keeps_its_ready_to_leased_ratio(tmp_path):
    with open(PEERS_JSON) as f:
        peers = report.json.load(f)
    figures = tmp_path / "embedded.json"
    figures.write_text(report.json.dumps({"c.p50": 0.5, "c.e2e50": 1.0}))
    text = report.render(peers, report.load_madeira(f"embedded={figures}"), 2.0)
    ready = next(line for line in text.splitlines()
                 if line.startswith("| p50 | **Madeira") and "ready→leased" in line)
    assert "no ratio" not in ready and ready.split("|")[5].strip().endswith("×"), ready
