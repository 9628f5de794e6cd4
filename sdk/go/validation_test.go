package madeira

import (
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"
)

type envelopeVectors struct {
	Valid []struct {
		Name     string          `json:"name"`
		Envelope json.RawMessage `json:"envelope"`
	} `json:"valid"`
	Invalid []struct {
		Name       string          `json:"name"`
		Envelope   json.RawMessage `json:"envelope"`
		Field      string          `json:"field"`
		Code       string          `json:"code"`
		ServerOnly bool            `json:"server_only"`
	} `json:"invalid"`
}

func TestEnvelopeVectorsValid(t *testing.T) {
	var v envelopeVectors
	readVector(t, "envelopes.json", &v)
	if len(v.Valid) == 0 {
		t.Fatal("no valid vectors")
	}
	for _, c := range v.Valid {
		t.Run(c.Name, func(t *testing.T) {
			task, err := ParseTask(c.Envelope)
			if err != nil {
				t.Fatalf("refused a valid envelope: %v", err)
			}
			if _, err := task.wire(DefaultLimits); err != nil {
				t.Fatalf("wire: %v", err)
			}
		})
	}
}

func TestEnvelopeVectorsInvalid(t *testing.T) {
	var v envelopeVectors
	readVector(t, "envelopes.json", &v)
	for _, c := range v.Invalid {
		t.Run(c.Name, func(t *testing.T) {
			_, err := ParseTask(c.Envelope)
			if c.ServerOnly {
				if err != nil {
					t.Fatalf("server-only case refused locally: %v", err)
				}
				return
			}
			var ve *ValidationError
			if !errors.As(err, &ve) {
				t.Fatalf("want *ValidationError for %s, got %v", c.Field, err)
			}
			if ve.Field != c.Field || ve.Code != c.Code {
				t.Fatalf("got field %q code %q, want field %q code %q (%s)", ve.Field, ve.Code, c.Field, c.Code, ve.Message)
			}
		})
	}
}

func validTask() Task {
	return Task{TaskType: "order.close_timeout", PayloadVersion: 1, Payload: map[string]any{"order_id": 1}}
}

func TestTaskValidateTyped(t *testing.T) {
	cases := []struct {
		name  string
		edit  func(*Task)
		field string
		code  string
	}{
		{"missing type", func(t *Task) { t.TaskType = "" }, "task_type", "missing_field"},
		{"missing version", func(t *Task) { t.PayloadVersion = 0 }, "payload_version", "missing_field"},
		{"negative version", func(t *Task) { t.PayloadVersion = -2 }, "payload_version", "invalid_field"},
		{"nil payload", func(t *Task) { t.Payload = nil }, "payload", "missing_field"},
		{"typed nil payload", func(t *Task) { t.Payload = (*struct{})(nil) }, "payload", "missing_field"},
		{"array payload", func(t *Task) { t.Payload = []int{1} }, "payload", "invalid_field"},
		{"string payload", func(t *Task) { t.Payload = "x" }, "payload", "invalid_field"},
		{"raw array payload", func(t *Task) { t.Payload = json.RawMessage(` [1]`) }, "payload", "invalid_field"},
		{"unencodable payload", func(t *Task) { t.Payload = map[string]any{"f": func() {}} }, "payload", "invalid_field"},
		{"too large payload", func(t *Task) { t.Payload = map[string]string{"s": strings.Repeat("x", 64<<10)} }, "payload", "payload_too_large"},
		{"sub-ms timeout", func(t *Task) { t.Timeout = 1500 * time.Microsecond }, "timeout_ms", "invalid_field"},
		{"timeout 99ms", func(t *Task) { t.Timeout = 99 * time.Millisecond }, "timeout_ms", "invalid_field"},
		{"negative timeout", func(t *Task) { t.Timeout = -time.Second }, "timeout_ms", "invalid_field"},
		{"priority", func(t *Task) { t.Priority = Int(1001) }, "priority", "invalid_field"},
		{"max retries", func(t *Task) { t.MaxRetries = Int(-1) }, "max_retries", "invalid_field"},
		{"trace id", func(t *Task) { t.TraceID = "a b" }, "trace_id", "invalid_field"},
		{"year 10000", func(t *Task) { t.ScheduleTime = time.Date(10000, 1, 1, 0, 0, 0, 0, time.UTC) }, "schedule_time", "invalid_schedule_time"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			task := validTask()
			c.edit(&task)
			var ve *ValidationError
			if err := task.Validate(); !errors.As(err, &ve) || ve.Field != c.field || ve.Code != c.code {
				t.Fatalf("got %v, want field %s code %s", err, c.field, c.code)
			}
		})
	}
}

func TestScheduleTimeIsSentAsRFC3339WithOffset(t *testing.T) {
	shanghai := time.FixedZone("CST", 8*3600)
	task := validTask()
	task.ScheduleTime = time.Date(2025, 9, 11, 12, 45, 0, 123_000_000, shanghai)
	w, err := task.wire(DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if w.ScheduleTime != "2025-09-11T04:45:00.123Z" {
		t.Fatalf("schedule_time = %q", w.ScheduleTime)
	}
	task.ScheduleTime = time.Date(2025, 9, 11, 12, 45, 0, 123_456_000, shanghai)
	if w, _ = task.wire(DefaultLimits); w.ScheduleTime != "2025-09-11T04:45:00.123456Z" {
		t.Fatalf("sub-millisecond schedule_time = %q", w.ScheduleTime)
	}
}

func TestAbsentFieldsAreOmittedNotNull(t *testing.T) {
	task := validTask()
	w, err := task.wire(DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := json.Marshal(w)
	if got := string(b); got != `{"task_type":"order.close_timeout","payload_version":1,"payload":{"order_id":1}}` {
		t.Fatalf("wire form = %s", got)
	}
	task.MaxRetries, task.Priority = Int(0), Int(0)
	w, _ = task.wire(DefaultLimits)
	b, _ = json.Marshal(w)
	if !strings.Contains(string(b), `"max_retries":0`) || !strings.Contains(string(b), `"priority":0`) {
		t.Fatalf("explicit zeros lost: %s", b)
	}
}

func TestParseTaskStrictness(t *testing.T) {
	base := `"task_type":"t","payload_version":1,"payload":{}`
	cases := map[string]string{
		`{` + base + `,"queue":null}`:                          "queue",
		`{` + base + `,"timeout_ms":1000.0}`:                   "timeout_ms",
		`{` + base + `,"priority":"5"}`:                        "priority",
		`{` + base + `,"payload_version":1}`:                   "",
		`{"task_type":"t","payload_version":1e0,"payload":{}}`: "payload_version",
		`{` + base + `,"schedule_time":null}`:                  "schedule_time",
		`{` + base + `,"idempotency_key":""}`:                  "idempotency_key",
		`{"task_type":"t","payload_version":1,"payload":null}`: "payload",
	}
	for body, field := range cases {
		_, err := ParseTask([]byte(body))
		var ve *ValidationError
		if field == "" {
			if err != nil {
				t.Errorf("%s: unexpected %v", body, err)
			}
			continue
		}
		if !errors.As(err, &ve) || ve.Field != field {
			t.Errorf("%s: got %v, want field %s", body, err, field)
		}
	}
	if _, err := ParseTask([]byte(`[1]`)); err == nil {
		t.Error("a non-object envelope was accepted")
	}
	task, err := ParseTask([]byte(`{` + base + `,"schedule_time":"2025-09-11t04:45:00z"}`))
	if err != nil || !task.ScheduleTime.Equal(time.Date(2025, 9, 11, 4, 45, 0, 0, time.UTC)) {
		t.Errorf("lower-case RFC 3339: %v %v", task, err)
	}
}

func TestFailureClasses(t *testing.T) {
	cases := []struct {
		err        error
		typ, retry string
		message    string
	}{
		{Permanent(errors.New("bad input")), "PermanentError", RetryNever, "bad input"},
		{Transient(errors.New("blip")), "TransientError", RetryFast, "blip"},
		{errors.New("boom"), "errors.errorString", RetryAuto, "boom"},
		{&panicError{value: "x", stack: "s"}, "panic", RetryAuto, "panic: x"},
	}
	for _, c := range cases {
		f := failure(c.err)
		if f.Error.Type != c.typ || f.Retry != c.retry || f.Error.Message != c.message {
			t.Errorf("%v: got %+v", c.err, f)
		}
	}
	// Wrapped classes keep their tier.
	if f := failure(errors.Join(errors.New("ctx"), Permanent(errors.New("p")))); f.Retry != RetryNever {
		t.Errorf("wrapped permanent: %+v", f)
	}
	if Permanent(nil) != nil || Transient(nil) != nil {
		t.Error("wrapping nil must stay nil")
	}
}
