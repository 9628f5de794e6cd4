#!/usr/bin/env python3
"""What migration 6 (task states in a table of their own) costs an existing record, and the
plans of the reads that go through its view: builds a schema at version 5 in a scratch schema
of the given PostgreSQL from the store's own migrations (src/store/redis_pg/pg_conn.cc), fills
it with N tasks (one in ten dead, the rest succeeded, a ~400-byte payload each), times
migration 6 in one transaction as `madeira migrate` runs it, then prints the plan and time of
each read shape the store sends (Backend::Search, SelectDead, GetRecorded, RecordedIds).

    bench/state_table_probe.py DATABASE_URL [N]     (N: 1,000,000 by default; ~30 s)
"""
import re
import subprocess
import sys
import time

SCHEMA = 'state_table_probe'
MIGRATIONS = 'src/store/redis_pg/pg_conn.cc'
READS = {
    'search by status': "SELECT task_id FROM task_rows WHERE status = 'dead' "
                        "ORDER BY state_seq DESC LIMIT 51",
    'search by status, a later page': "SELECT task_id FROM task_rows WHERE status = 'dead' "
                                      "AND state_seq < 500000 ORDER BY state_seq DESC LIMIT 51",
    'search by status and queue': "SELECT task_id FROM task_rows WHERE status = 'succeeded' "
                                  "AND queue = 'q' ORDER BY state_seq DESC LIMIT 51",
    'search, no filter': "SELECT task_id FROM task_rows ORDER BY seq DESC LIMIT 51",
    'search by queue, a later page': "SELECT task_id FROM task_rows WHERE queue = 'q' AND "
                                     "seq < 500000 ORDER BY seq DESC LIMIT 51",
    'search by trace id': "SELECT task_id FROM task_rows WHERE trace_id = md5('77') "
                          "ORDER BY seq DESC LIMIT 51",
    'one task': "SELECT * FROM task_rows WHERE task_id = 'task-77'",
    'ids of a batch': "SELECT task_id, status, content_hash FROM task_rows WHERE task_id = "
                      "ANY (string_to_array('task-5,task-6', ','))",
}


def main():
    if len(sys.argv) not in (2, 3):
        sys.exit(__doc__)
    url, n = sys.argv[1], int(sys.argv[2]) if len(sys.argv) == 3 else 1_000_000
    migrations = re.findall(r'R"SQL\((.*?)\)SQL"', open(MIGRATIONS).read(), re.S)
    if len(migrations) < 6:
        sys.exit(f'{MIGRATIONS}: expected at least 6 migrations, found {len(migrations)}')

    def psql(*statements, quiet=True):
        args = ['psql', '-X', '-v', 'ON_ERROR_STOP=1', url, '-c', f'SET search_path TO {SCHEMA}']
        for s in statements:
            args += ['-c', s]
        return subprocess.run(args + (['-q'] if quiet else []), check=True, capture_output=True,
                              text=True).stdout

    psql(f'DROP SCHEMA IF EXISTS {SCHEMA} CASCADE', f'CREATE SCHEMA {SCHEMA}')
    try:
        psql(''.join(migrations[:5]))
        psql(f"""INSERT INTO tasks SELECT 'task-' || g, g, 3, 'q', 't', 1,
                 '{{"k":"' || repeat('x', 400) || '"}}', 1000, 30000, 3, 0, md5(g::text), NULL,
                 md5(g::text), CASE WHEN g % 10 = 0 THEN 'dead' ELSE 'succeeded' END, 0, 1, 1000,
                 2000, NULL, NULL, NULL, false, 0, false, '' FROM generate_series(1, {n}) g""",
             'VACUUM ANALYZE tasks')
        started = time.monotonic()
        psql('BEGIN', migrations[5], 'COMMIT')
        print(f'migration 6 over {n:,} tasks: {time.monotonic() - started:.2f} s')
        psql('VACUUM ANALYZE task_states', 'VACUUM ANALYZE tasks')
        for name, sql in READS.items():
            plan = psql(f'EXPLAIN (ANALYZE, COSTS OFF) {sql}', quiet=False).splitlines()
            scans = [line.strip().lstrip('-> ').split(' (')[0] for line in plan
                     if 'Scan' in line or 'Sort Key' in line]
            took = next((line.strip() for line in plan if 'Execution Time' in line), '?')
            print(f'{name}: {took}; {"; ".join(scans)}')
    finally:
        psql(f'DROP SCHEMA {SCHEMA} CASCADE')


if __name__ == '__main__':
    main()
