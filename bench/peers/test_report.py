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



def peers_doc():
    """The smallest results.json render() reads: latency figures of both peers (ms)."""
    figures = {"bullmq": {"c.p50": 7.9, "c.p99": 168.0, "c.max": 195.0},
               "asynq": {"c.p50": 441.0, "c.p99": 1408.0, "c.max": 1458.0}}
    return {
        "generated": "2026-12-01T17:34:27+00:00", "runs": 3, "scale": 1, "seconds": 449,
        "machine": {"cpus": 2, "cpu_model": "test", "kernel": "Linux", "mem_gib": 24,
                    "loadavg_start": "0", "loadavg_end": "0"},
        "versions": {"bullmq": "6", "ioredis": "6", "node": "v20", "asynq": "v0.26", "go": "go1",
                     "redis": "7"},
        "redis_config": {"appendonly": "yes", "appendfsync": "always"},
        "results": [{"peer": peer, "id": fid, "unit": "ms", "median": v, "min": v, "max": v}
                    for peer, figs in figures.items() for fid, v in figs.items()],
    }


def test_latency_compares_sent_to_leased_and_gives_no_ratio_to_a_ready_to_leased_of_zero(tmp_path):
    """On redis-pg a task is leased before its 202 is sent, so ready→leased is clamped at 0: its
    rows must not claim a ratio, and the sent→leased rows carry the comparison instead."""
    figures = tmp_path / "redis-pg.json"
    figures.write_text(report.json.dumps(
        {"c.p50": 0, "c.p99": 0, "c.max": 1.7, "c.e2e50": 3.6, "c.e2e99": 10.7, "c.e2emax": 30}))
    text = report.render(peers_doc(), report.load_madeira(f"redis-pg={figures}"), 2.0)
    p50 = [line for line in text.splitlines() if line.startswith("| p50 | **Madeira")]
    assert len(p50) == 2, p50
    ready, sent = p50
    assert "ready→leased" in ready and "no ratio" in ready and "| — |" in ready, ready
    assert "sent→leased" in sent and f"| {7.9 / 3.6:.2f}× |" in sent, sent
    max_rows = [line for line in text.splitlines() if line.startswith("| max | **Madeira")]
    assert len(max_rows) == 2 and "no ratio" in max_rows[0], max_rows
    assert "sent→leased" in max_rows[1] and f"| {195.0 / 30:.2f}× |" in max_rows[1], max_rows


def test_a_store_answered_before_its_leases_keeps_its_ready_to_leased_ratio(tmp_path):
    figures = tmp_path / "embedded.json"
    figures.write_text(report.json.dumps({"c.p50": 0.5, "c.e2e50": 1.0}))
    text = report.render(peers_doc(), report.load_madeira(f"embedded={figures}"), 2.0)
    ready = next(line for line in text.splitlines()
                 if line.startswith("| p50 | **Madeira") and "ready→leased" in line)
    assert "no ratio" not in ready and f"| {7.9 / 0.5:.2f}× |" in ready, ready


def test_the_peers_shapes_are_compared_before_make_benchs_own(tmp_path):
    """Madeira's c at 2,000/s (pc.*) and 10,000 delayed tasks (pd.*) are the scenarios the peers
    ran: when a store has them they are its rows, not c at 5,000/s or f with 1,000 tasks; two
    files of one store (make bench's and the peer shapes') make one set of rows."""
    bench = tmp_path / "bench.json"
    bench.write_text(report.json.dumps({"results": [
        {"id": "c.p50", "store": "sqlite", "median": 0.5}, {"id": "c.e2e50", "store": "sqlite",
                                                            "median": 1.5},
        {"id": "f.p50", "store": "sqlite", "median": 5.0}]}))
    shapes = tmp_path / "shapes.json"
    shapes.write_text(report.json.dumps({"results": [
        {"id": "pc.p50", "store": "sqlite", "median": 0.2}, {"id": "pc.e2e50", "store": "sqlite",
                                                             "median": 1.0},
        {"id": "pd.p50", "store": "sqlite", "median": 26.0}]}))
    doc = peers_doc()
    doc["results"] += [{"peer": "bullmq", "id": "d.p50", "unit": "ms", "median": 432,
                        "min": 432, "max": 432}]
    madeira = report.merge_by_label(report.load_madeira(str(bench)) +
                                    report.load_madeira(str(shapes)))
    assert [label for label, _, _ in madeira] == ["embedded"]
    text = report.render(doc, madeira, 2.0)
    p50 = [line for line in text.splitlines() if line.startswith("| p50 | **Madeira")]
    assert len(p50) == 3, p50  # c: ready→leased and sent→leased; d: one
    assert "| **0.2** |" in p50[0] and f"| {7.9 / 0.2:.2f}× |" in p50[0], p50[0]
    assert "| **1.0** |" in p50[1], p50[1]
    assert "| **26.0** |" in p50[2] and f"| {432 / 26:.2f}× |" in p50[2], p50[2]

    only_bench = report.render(doc, report.load_madeira(str(bench)), 2.0)
    assert "| **0.5** |" in only_bench and "| **5.0** |" in only_bench
