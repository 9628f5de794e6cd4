package madeira

import (
	"encoding/json"
	"strings"
	"time"
)

// Limits are the payload limits checked locally; they mirror the server's
// [limits] max_depth and max_payload_bytes and default to 5 and 64 KiB.
type Limits struct {
	MaxPayloadDepth int
	MaxPayloadBytes int
}

// DefaultLimits are the server's default payload limits.
var DefaultLimits = Limits{MaxPayloadDepth: 5, MaxPayloadBytes: 64 << 10}

// wireTask is the envelope exactly as sent: absent fields are omitted, never null.
type wireTask struct {
	TaskID         string          `json:"task_id,omitempty"`
	TaskType       string          `json:"task_type"`
	Queue          string          `json:"queue,omitempty"`
	PayloadVersion int             `json:"payload_version"`
	Payload        json.RawMessage `json:"payload"`
	ScheduleTime   string          `json:"schedule_time,omitempty"`
	TimeoutMS      int64           `json:"timeout_ms,omitempty"`
	MaxRetries     *int            `json:"max_retries,omitempty"`
	Priority       *int            `json:"priority,omitempty"`
	TraceID        string          `json:"trace_id,omitempty"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`
}

// Validate checks the envelope against SPEC §2 with the default limits.
// It returns a *ValidationError naming the field, or nil.
func (t *Task) Validate() error {
	_, err := t.wire(DefaultLimits)
	return err
}

// wire validates the task and returns its wire form.
func (t *Task) wire(lim Limits) (*wireTask, error) {
	w := &wireTask{
		TaskID: t.TaskID, TaskType: t.TaskType, Queue: t.Queue,
		PayloadVersion: t.PayloadVersion, MaxRetries: t.MaxRetries, Priority: t.Priority,
		TraceID: t.TraceID, IdempotencyKey: t.IdempotencyKey,
	}
	if t.TaskID != "" && !validTaskID(t.TaskID) {
		return nil, invalid("task_id", "invalid_field", "task_id must be 1-128 characters of [A-Za-z0-9._:-]")
	}
	if t.TaskType == "" {
		return nil, invalid("task_type", "missing_field", "task_type is required")
	}
	if !validName(t.TaskType) {
		return nil, invalid("task_type", "invalid_field", "task_type must match ^[a-z0-9][a-z0-9_.-]{0,127}$")
	}
	if t.Queue != "" && !validName(t.Queue) {
		return nil, invalid("queue", "invalid_field", "queue must match ^[a-z0-9][a-z0-9_.-]{0,127}$")
	}
	if t.PayloadVersion == 0 {
		return nil, invalid("payload_version", "missing_field", "payload_version is required (an integer >= 1)")
	}
	if t.PayloadVersion < 0 {
		return nil, invalid("payload_version", "invalid_field", "payload_version must be an integer >= 1")
	}
	payload, err := encodePayload(t.Payload, lim)
	if err != nil {
		return nil, err
	}
	w.Payload = payload
	if !t.ScheduleTime.IsZero() {
		s, err := formatScheduleTime(t.ScheduleTime)
		if err != nil {
			return nil, err
		}
		w.ScheduleTime = s
	}
	if t.Timeout != 0 {
		if t.Timeout%time.Millisecond != 0 {
			return nil, invalid("timeout_ms", "invalid_field", "timeout must be a whole number of milliseconds")
		}
		ms := t.Timeout.Milliseconds()
		if ms < 100 || ms > 86_400_000 {
			return nil, invalid("timeout_ms", "invalid_field", "timeout_ms must be an integer from 100 to 86400000")
		}
		w.TimeoutMS = ms
	}
	if t.MaxRetries != nil && (*t.MaxRetries < 0 || *t.MaxRetries > 100) {
		return nil, invalid("max_retries", "invalid_field", "max_retries must be an integer from 0 to 100")
	}
	if t.Priority != nil && (*t.Priority < 0 || *t.Priority > 1000) {
		return nil, invalid("priority", "invalid_field", "priority must be an integer from 0 to 1000")
	}
	if t.TraceID != "" && !validTraceID(t.TraceID) {
		return nil, invalid("trace_id", "invalid_field", "trace_id must be 1-128 visible ASCII characters")
	}
	if len([]rune(t.IdempotencyKey)) > 200 || strings.IndexFunc(t.IdempotencyKey, isControl) >= 0 {
		return nil, invalid("idempotency_key", "invalid_field", "idempotency_key must be a string of 1-200 characters, none of them a control character")
	}
	return w, nil
}

// formatScheduleTime renders a zone-aware time as RFC 3339 in UTC, with
// milliseconds (or more digits when the time has sub-millisecond precision).
func formatScheduleTime(t time.Time) (string, error) {
	u := t.UTC()
	if u.Year() < 0 || u.Year() > 9999 {
		return "", invalid("schedule_time", "invalid_schedule_time", "schedule_time year %d cannot be written in RFC 3339", u.Year())
	}
	if u.Nanosecond()%int(time.Millisecond) != 0 {
		return u.Format(time.RFC3339Nano), nil
	}
	return u.Format("2006-01-02T15:04:05.000Z"), nil
}

func encodePayload(p any, lim Limits) (json.RawMessage, error) {
	if p == nil {
		return nil, invalid("payload", "missing_field", "payload is required")
	}
	b, err := json.Marshal(p)
	if err != nil {
		return nil, invalid("payload", "invalid_field", "payload does not encode to JSON: %v", err)
	}
	if len(b) == 0 || b[0] != '{' {
		// json.Marshal compacts RawMessage, so the first byte is the value's.
		if string(b) == "null" {
			return nil, invalid("payload", "missing_field", "payload is required")
		}
		return nil, invalid("payload", "invalid_field", "payload must be a JSON object")
	}
	if lim.MaxPayloadDepth > 0 && jsonDepth(b) > lim.MaxPayloadDepth {
		return nil, invalid("payload", "payload_too_deep",
			"payload nests deeper than %d levels (the payload object itself is level 1)", lim.MaxPayloadDepth)
	}
	if lim.MaxPayloadBytes > 0 && len(b) > lim.MaxPayloadBytes {
		return nil, invalid("payload", "payload_too_large", "payload is %d bytes encoded, over %d", len(b), lim.MaxPayloadBytes)
	}
	return b, nil
}

// jsonDepth is the deepest nesting of objects and arrays in valid JSON b.
func jsonDepth(b []byte) int {
	depth, max := 0, 0
	inString, escaped := false, false
	for _, c := range b {
		switch {
		case inString:
			if escaped {
				escaped = false
			} else if c == '\\' {
				escaped = true
			} else if c == '"' {
				inString = false
			}
		case c == '"':
			inString = true
		case c == '{' || c == '[':
			depth++
			if depth > max {
				max = depth
			}
		case c == '}' || c == ']':
			depth--
		}
	}
	return max
}

// validName matches ^[a-z0-9][a-z0-9_.-]{0,127}$.
func validName(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		lowerOrDigit := (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9')
		if i == 0 && !lowerOrDigit {
			return false
		}
		if !lowerOrDigit && c != '_' && c != '.' && c != '-' {
			return false
		}
	}
	return true
}

// validTaskID: 1–128 characters of [A-Za-z0-9._:-].
func validTaskID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		c := s[i]
		ok := (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') ||
			c == '.' || c == '_' || c == ':' || c == '-'
		if !ok {
			return false
		}
	}
	return true
}

// validTraceID: 1–128 visible ASCII characters.
func validTraceID(s string) bool {
	if len(s) == 0 || len(s) > 128 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// isControl reports the characters no idempotency key may hold (U+0000-U+001F, U+007F): a NUL
// fits no PostgreSQL text column.
func isControl(r rune) bool { return r < 0x20 || r == 0x7f }
