#!/usr/bin/env python3
"""Folds the JSON lines run.sh collected into one results file: median, min and max per figure.

usage: aggregate.py LINES.jsonl META.json OUT.json

Every input line is one result of one run: {"run": N, "peer", "id", "what", "unit", "value",
"settings"?, "note"?}; lines with "run": 0 (the concurrency tuning) are kept as they are.
META.json holds what run.sh knows about the run (machine, versions, commands, failures).
"""

import json
import sys


def median(values):
    s = sorted(values)
    n = len(s)
    return s[n // 2] if n % 2 else (s[n // 2 - 1] + s[n // 2]) / 2


def aggregate(lines):
    figures = {}
    tuning = []
    for line in lines:
        if line.get("run") == 0:
            tuning.append(line)
            continue
        key = (line["peer"], line["id"])
        fig = figures.setdefault(key, {
            "peer": line["peer"],
            "id": line["id"],
            "what": line["what"],
            "unit": line["unit"],
            "values": [],
            "settings": line.get("settings", {}),
        })
        if line.get("note"):
            fig.setdefault("notes", [])
            if line["note"] not in fig["notes"]:
                fig["notes"].append(line["note"])
        if line.get("value") is not None:
            fig["values"].append(line["value"])
    results = []
    for fig in figures.values():
        vals = fig["values"]
        fig["median"] = median(vals) if vals else None
        fig["min"] = min(vals) if vals else None
        fig["max"] = max(vals) if vals else None
        results.append(fig)
    return results, tuning


def main():
    if len(sys.argv) != 4:
        sys.exit(__doc__)
    lines_path, meta_path, out_path = sys.argv[1:]
    lines = []
    with open(lines_path) as f:
        for raw in f:
            raw = raw.strip()
            if raw.startswith("{"):
                lines.append(json.loads(raw))
    with open(meta_path) as f:
        doc = json.load(f)
    doc["results"], doc["tuning"] = aggregate(lines)
    with open(out_path, "w") as f:
        json.dump(doc, f, indent=1)
        f.write("\n")


if __name__ == "__main__":
    main()
