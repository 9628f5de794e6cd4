#!/usr/bin/env python3
"""PostgreSQL's CPU and WAL in each phase of a redis-pg run, for A/B checks of the record:
runs COMMAND while sampling, every 0.5 s, the CPU of the private PostgreSQL's processes (the
postmaster, its live backends and the ones it reaped), pg_stat_database's inserted and updated
rows, and pg_current_wal_lsn(); then splits the run into the phase where rows were inserted
(a scenario's preload of submits) and the one where rows were updated (a drain's leases and
acks) and prints each phase's CPU seconds and WAL bytes a task.

    bench/pg_phases.py DIR TASKS -- COMMAND...
    e.g. bench/pg_phases.py /tmp/svc 200000 -- bench/store_cpu.sh /tmp/svc build-bench/madeira b 1

DIR: a folder `scripts/test-services.sh start DIR` made; TASKS: the tasks the run submits and
drains (200,000 for `b` at scale 1), to put the WAL per task. Each sample opens one psql
session, which costs PostgreSQL a few ms: the same in every run compared.
"""
import os
import subprocess
import sys
import threading
import time

SAMPLE_S = 0.5
ROWS_A_SAMPLE = 500  # fewer rows changed in a sample than this: not part of a phase


def sample(pg_dir, port, out, stop):
    postmaster = int(open(os.path.join(pg_dir, 'data', 'postmaster.pid')).readline())
    tick = os.sysconf('SC_CLK_TCK')
    query = ("SELECT sum(tup_inserted), sum(tup_updated), pg_current_wal_lsn() - '0/0'::pg_lsn "
             "FROM pg_stat_database")
    while not stop.is_set():
        ticks = 0
        children = subprocess.run(['pgrep', '-P', str(postmaster)], capture_output=True,
                                  text=True).stdout.split()
        for pid in children + [str(postmaster)]:
            try:
                fields = open(f'/proc/{pid}/stat').read().rsplit(')', 1)[1].split()
            except OSError:
                continue
            ticks += int(fields[11]) + int(fields[12])  # utime, stime
            if pid == str(postmaster):
                ticks += int(fields[13]) + int(fields[14])  # reaped backends
        rows = subprocess.run(['psql', '-X', '-A', '-t', '-F', ' ', '-h', '127.0.0.1', '-p', port,
                               '-U', 'madeira', 'madeira', '-c', query], capture_output=True,
                              text=True).stdout.split()
        if len(rows) == 3:
            out.append((time.monotonic(), ticks / tick, int(rows[0]), int(rows[1]),
                        int(float(rows[2]))))
        stop.wait(SAMPLE_S)


def phase(samples, column):
    """First and last sample index around the samples where `column` grew by a phase's rate."""
    busy = [i for i in range(1, len(samples))
            if samples[i][column] - samples[i - 1][column] > ROWS_A_SAMPLE]
    return (busy[0] - 1, busy[-1]) if busy else None


def main():
    if len(sys.argv) < 5 or sys.argv[3] != '--':
        sys.exit(__doc__)
    svc_dir, tasks, command = sys.argv[1], int(sys.argv[2]), sys.argv[4:]
    env = dict(line.strip().split('=', 1) for line in open(os.path.join(svc_dir, 'env')))
    port = env['MADEIRA_TEST_DATABASE_URL'].rsplit(':', 1)[1].split('/')[0]
    samples, stop = [], threading.Event()
    sampler = threading.Thread(target=sample, args=(os.path.join(svc_dir, 'pg'), port, samples,
                                                    stop))
    sampler.start()
    try:
        code = subprocess.run(command).returncode
    finally:
        stop.set()
        sampler.join()
    updates = phase(samples, 3)
    inserts = phase(samples[:updates[0] + 1] if updates else samples, 2)
    for name, span in (('preload (rows inserted)', inserts), ('drain (rows updated)', updates)):
        if not span:
            print(f'{name}: none')
            continue
        a, b = samples[span[0]], samples[span[1]]
        print(f'{name}: {b[0] - a[0]:.1f} s, PostgreSQL {b[1] - a[1]:.2f} s of CPU, '
              f'{(b[4] - a[4]) / tasks:.0f} B of WAL a task, {b[2] - a[2]} rows inserted, '
              f'{b[3] - a[3]} updated')
    sys.exit(code)


if __name__ == '__main__':
    main()
