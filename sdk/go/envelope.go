package madeira

import (
	"bytes"
	"encoding/json"
	"sort"
	"strconv"
	"strings"
	"time"
)

var envelopeFields = map[string]bool{
	"task_id": true, "task_type": true, "queue": true, "payload_version": true,
	"payload": true, "schedule_time": true, "timeout_ms": true, "max_retries": true,
	"retry_count": true, "priority": true, "trace_id": true, "idempotency_key": true,
}

// ParseTask reads an envelope in its wire form (the JSON body of
// POST /v1/tasks) with the server's strictness: unknown fields, null for an
// optional field, non-integer numbers, and a schedule_time that is a number or
// lacks a zone offset are all refused with a *ValidationError naming the field.
// The returned Task has been validated with DefaultLimits.
func ParseTask(data []byte) (*Task, error) {
	var obj map[string]json.RawMessage
	if err := json.Unmarshal(data, &obj); err != nil || obj == nil {
		return nil, &ValidationError{Code: "invalid_json", Message: "the envelope must be a JSON object"}
	}
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if !envelopeFields[k] {
			return nil, invalid(k, "unknown_field", "unknown field %q", k)
		}
	}

	t := &Task{}
	var err error
	if t.TaskID, err = optString(obj, "task_id", true); err != nil {
		return nil, err
	}
	if _, ok := obj["task_type"]; !ok {
		return nil, invalid("task_type", "missing_field", "task_type is required")
	}
	if t.TaskType, err = optString(obj, "task_type", true); err != nil {
		return nil, err
	}
	if t.Queue, err = optString(obj, "queue", true); err != nil {
		return nil, err
	}
	raw, ok := obj["payload_version"]
	if !ok {
		return nil, invalid("payload_version", "missing_field", "payload_version is required")
	}
	v, ok := jsonInt(raw)
	if !ok || v < 1 || v > 1<<31-1 {
		return nil, invalid("payload_version", "invalid_field", "payload_version must be an integer >= 1")
	}
	t.PayloadVersion = int(v)
	raw, ok = obj["payload"]
	if !ok {
		return nil, invalid("payload", "missing_field", "payload is required")
	}
	if trimmed := bytes.TrimSpace(raw); len(trimmed) == 0 || trimmed[0] != '{' {
		return nil, invalid("payload", "invalid_field", "payload must be a JSON object")
	}
	t.Payload = raw
	if raw, ok = obj["schedule_time"]; ok {
		if t.ScheduleTime, err = parseScheduleTime(raw); err != nil {
			return nil, err
		}
	}
	if n, present, err := optInt(obj, "timeout_ms", 100, 86_400_000); err != nil {
		return nil, err
	} else if present {
		t.Timeout = time.Duration(n) * time.Millisecond
	}
	if n, present, err := optInt(obj, "max_retries", 0, 100); err != nil {
		return nil, err
	} else if present {
		t.MaxRetries = Int(int(n))
	}
	if _, _, err := optInt(obj, "retry_count", 0, 0); err != nil {
		return nil, invalid("retry_count", "invalid_field", "retry_count is server-owned; a client may send only 0")
	}
	if n, present, err := optInt(obj, "priority", 0, 1000); err != nil {
		return nil, err
	} else if present {
		t.Priority = Int(int(n))
	}
	if t.TraceID, err = optString(obj, "trace_id", true); err != nil {
		return nil, err
	}
	if t.IdempotencyKey, err = optString(obj, "idempotency_key", true); err != nil {
		return nil, err
	}
	if err := t.Validate(); err != nil {
		return nil, err
	}
	return t, nil
}

// optString reads an optional string field; present-but-empty is refused
// when nonEmpty is set (every envelope string has a minimum length of 1).
func optString(obj map[string]json.RawMessage, field string, nonEmpty bool) (string, error) {
	raw, ok := obj[field]
	if !ok {
		return "", nil
	}
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return "", invalid(field, "invalid_field", "%s must be a string", field)
	}
	if nonEmpty && s == "" {
		return "", invalid(field, "invalid_field", "%s must not be empty", field)
	}
	return s, nil
}

// optInt reads an optional integer field within [min, max].
func optInt(obj map[string]json.RawMessage, field string, min, max int64) (int64, bool, error) {
	raw, ok := obj[field]
	if !ok {
		return 0, false, nil
	}
	n, ok := jsonInt(raw)
	if !ok || n < min || n > max {
		return 0, true, invalid(field, "invalid_field", "%s must be an integer from %d to %d", field, min, max)
	}
	return n, true, nil
}

// jsonInt accepts only a JSON integer literal: 3.0, 3e0 and "3" are refused.
func jsonInt(raw json.RawMessage) (int64, bool) {
	s := string(bytes.TrimSpace(raw))
	digits := strings.TrimPrefix(s, "-")
	if digits == "" {
		return 0, false
	}
	for i := 0; i < len(digits); i++ {
		if digits[i] < '0' || digits[i] > '9' {
			return 0, false
		}
	}
	n, err := strconv.ParseInt(s, 10, 64)
	return n, err == nil
}

// parseScheduleTime accepts only an RFC 3339 string with "Z" or an offset.
func parseScheduleTime(raw json.RawMessage) (time.Time, error) {
	var s string
	if err := json.Unmarshal(raw, &s); err != nil || bytes.Equal(bytes.TrimSpace(raw), []byte("null")) {
		return time.Time{}, invalid("schedule_time", "invalid_schedule_time",
			"schedule_time must be an RFC 3339 string with a zone offset, not %s", string(raw))
	}
	// RFC 3339 allows lower-case "t" and "z"; Go's parser wants upper case.
	t, err := time.Parse(time.RFC3339Nano, strings.Map(func(r rune) rune {
		if r == 't' || r == 'z' {
			return r - 'a' + 'A'
		}
		return r
	}, s))
	if err != nil {
		return time.Time{}, invalid("schedule_time", "invalid_schedule_time",
			"schedule_time must be RFC 3339 with a zone offset: %q", s)
	}
	return t, nil
}
