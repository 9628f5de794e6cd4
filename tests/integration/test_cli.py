"""`madeira task ...` and `madeira dead ...` against the running server."""

import json
import os
import subprocess

from client import uid
from conftest import madeira_bin


def cli(api, *args, token=None):
    env = {k: v for k, v in os.environ.items() if not k.startswith("MADEIRA_")}
    env["MADEIRA_URL"] = api.url
    if token:
        env["MADEIRA_TOKEN"] = token
    return subprocess.run([madeira_bin()] + list(args), capture_output=True, text=True,
                          timeout=30, env=env)


def test_submit_get_and_dead_list(api, q):
    p = cli(api, "task", "submit", "--type", "cli.job", "--queue", q, "--payload",
            '{"order_id": 1}', "--priority", "7")
    assert p.returncode == 0, p.stderr
    tid = json.loads(p.stdout)["task_id"]
    p = cli(api, "task", "get", tid)
    assert p.returncode == 0, p.stderr
    t = json.loads(p.stdout)
    assert t["payload"] == {"order_id": 1} and t["priority"] == 7 and t["queue"] == q
    api.fail(api.lease_one(q, wait_ms=0)["lease_id"], retry="never")
    p = cli(api, "dead", "list", "--queue", q)
    assert p.returncode == 0, p.stderr
    assert tid in p.stdout
    p = cli(api, "dead", "replay", tid)
    assert p.returncode == 0 and json.loads(p.stdout)["replayed"] == 1, p
    assert api.task(tid)["status"] == "pending"
    p = cli(api, "task", "cancel", tid)
    assert p.returncode == 0, p.stderr
    assert api.task(tid)["status"] == "cancelled"


def test_submit_with_delay_and_file(api, q, tmp_path):
    p = cli(api, "task", "submit", "--type", "cli.job", "--queue", q, "--payload", "{}",
            "--delay", "1h")
    assert p.returncode == 0, p.stderr
    assert api.task(json.loads(p.stdout)["task_id"])["status"] == "scheduled"
    f = tmp_path / "env.json"
    tid = uid("file")
    f.write_text(json.dumps({"task_id": tid, "task_type": "cli.file", "queue": q,
                             "payload_version": 1, "payload": {}}))
    p = cli(api, "task", "submit", "--file", str(f))
    assert p.returncode == 0, p.stderr
    assert api.task(tid)["task_type"] == "cli.file"


def test_exit_codes(api, q):
    p = cli(api, "task", "get", uid("missing"))
    assert p.returncode == 1 and "not_found" in p.stderr, p
    p = cli(api, "task", "submit", "--type", "Bad Type", "--payload", "{}")
    assert p.returncode == 1 and "invalid_field" in p.stderr, p
    p = cli(api, "task", "submit", "--type", "x", "--payload", "{nope")
    assert p.returncode == 2, p
    p = cli(api, "task", "submit", "--type", "x", "--payload", "{}", "--delay", "1s", "--at",
            "2030-01-01T00:00:00Z")
    assert p.returncode == 2, p
    p = cli(api, "dead", "replay")
    assert p.returncode == 2, p
    p = cli(api, "task", "frobnicate")
    assert p.returncode == 2, p


def test_unreachable_server_is_exit_2():
    class Dead:
        url = "http://127.0.0.1:9"
    p = cli(Dead(), "task", "get", "x")
    assert p.returncode == 2 and "cannot reach" in p.stderr, p


def test_help_and_version():
    for args in (["--help"], ["serve", "--help"], ["task", "submit", "--help"], ["dead", "--help"]):
        p = subprocess.run([madeira_bin()] + args, capture_output=True, text=True, timeout=10)
        assert p.returncode == 0 and "Usage" in p.stdout, (args, p)
    p = subprocess.run([madeira_bin(), "version"], capture_output=True, text=True, timeout=10)
    assert p.returncode == 0 and p.stdout.startswith("madeira ")
