-- What one flush's state UPDATE costs a row, by table layout. Run in a scratch database:
--   psql -X -q -v ON_ERROR_STOP=1 -f bench/state_update_probe.sql "$MADEIRA_TEST_DATABASE_URL"
DROP SCHEMA IF EXISTS state_probe CASCADE;
CREATE SCHEMA state_probe;
SET search_path = state_probe;
SET client_min_messages = warning;
-- wide: the tasks table as migration 1 + 5 make it, with its four indexes.
CREATE TABLE wide (
  task_id text PRIMARY KEY, seq bigint NOT NULL UNIQUE, ver bigint NOT NULL, queue text NOT NULL,
  task_type text NOT NULL, payload_version int NOT NULL, payload text NOT NULL,
  schedule_time bigint NOT NULL, timeout_ms bigint NOT NULL, max_retries int NOT NULL,
  priority int NOT NULL, trace_id text NOT NULL, idempotency_key text, content_hash text NOT NULL,
  status text NOT NULL, retry_count int NOT NULL, attempts int NOT NULL, created_at bigint NOT NULL,
  updated_at bigint NOT NULL, next_attempt_at bigint, last_error text, result text,
  deduplicated boolean NOT NULL, fast_retries_used int NOT NULL, in_fast_retry boolean NOT NULL,
  owner text NOT NULL DEFAULT '');
CREATE INDEX wide_status_seq ON wide(status, seq);
CREATE INDEX wide_trace ON wide(trace_id, seq);
INSERT INTO wide SELECT 'task-' || g, g, 1, 'q', 'noop', 1,
  '{"n":' || g || ',"pad":"' || repeat('x', 300) || '"}', 0, 30000, 3, 0, md5(g::text), NULL,
  md5(g::text), 'pending', 0, 0, 0, 0, 0, NULL, NULL, false, 0, false, ''
  FROM generate_series(1, 100000) g;
-- narrow: the state columns alone, with the search's (status, seq) index.
CREATE TABLE narrow AS SELECT task_id, seq, ver, status, retry_count, attempts, updated_at,
  next_attempt_at, last_error, result, deduplicated, fast_retries_used, in_fast_retry FROM wide;
ALTER TABLE narrow ADD PRIMARY KEY (task_id);
CREATE INDEX narrow_status_seq ON narrow(status, seq);
-- hot: the same narrow table without the status index and with room on its pages, so that
-- PostgreSQL can update a row in place (a HOT update: no index entries).
CREATE TABLE hot WITH (fillfactor = 50) AS SELECT * FROM narrow;
ALTER TABLE hot ADD PRIMARY KEY (task_id);
VACUUM ANALYZE wide, narrow, hot;
CREATE TEMPORARY TABLE record_states AS SELECT task_id, ver, status, retry_count, attempts,
  updated_at, next_attempt_at, last_error, result, deduplicated, fast_retries_used, in_fast_retry
  FROM wide WITH NO DATA;
-- One flush: 1,000 state rows (leases, then acks of the same tasks) COPYed into record_states,
-- then the store's UPDATE (UpdateStatesSql in backend.cc) against table t. Returns its ms.
CREATE FUNCTION flush(t regclass, base int, new_status text) RETURNS double precision AS $$
DECLARE started timestamptz; n int;
BEGIN
  DELETE FROM record_states;
  INSERT INTO record_states SELECT 'task-' || g, 0, new_status, 0, 1, 5, NULL, NULL, NULL, false,
    0, false FROM generate_series(base + 1, base + 1000) g;
  started := clock_timestamp();
  EXECUTE format('WITH u AS (UPDATE %s t SET ver = t.ver + 1, status = x.status, '
    'retry_count = x.retry_count, attempts = x.attempts, updated_at = x.updated_at, '
    'next_attempt_at = x.next_attempt_at, last_error = x.last_error, result = x.result, '
    'deduplicated = x.deduplicated, fast_retries_used = x.fast_retries_used, '
    'in_fast_retry = x.in_fast_retry FROM record_states x '
    'WHERE t.task_id = ANY (ARRAY(SELECT task_id FROM record_states)) '
    'AND t.task_id = x.task_id RETURNING t.task_id) SELECT count(*) FROM u', t) INTO n;
  RETURN extract(epoch FROM clock_timestamp() - started) * 1000;
END $$ LANGUAGE plpgsql;
-- Three rounds, the layouts interleaved: 20 batches of 1,000 tasks each, leased then acked
-- (two flushes), every flush a transaction of its own, as the store's are.
CREATE TABLE timings (layout text, ms double precision);
SELECT format('INSERT INTO timings SELECT %L, flush(%L, %s, %L)', layout, layout,
              ((r - 1) * 20 + b) * 1000, st)
  FROM generate_series(1, 3) r, unnest(ARRAY['wide', 'narrow', 'hot']) WITH ORDINALITY l(layout, o),
       generate_series(0, 19) b, unnest(ARRAY['running', 'succeeded']) WITH ORDINALITY s(st, so)
  ORDER BY r, o, b, so \gexec
SELECT layout, count(*) AS flushes, round(percentile_cont(0.5) WITHIN GROUP (ORDER BY ms)::numeric, 1)
       AS median_ms_per_1000_rows, round(min(ms)::numeric, 1) AS min_ms, round(max(ms)::numeric, 1) AS max_ms
  FROM timings GROUP BY layout ORDER BY median_ms_per_1000_rows DESC;
SELECT relname, n_tup_upd, n_tup_hot_upd FROM pg_stat_user_tables WHERE schemaname = 'state_probe'
  AND relname IN ('wide', 'narrow', 'hot') ORDER BY relname;
DROP SCHEMA state_probe CASCADE;
