package madeira

import (
	"encoding/json"
	"time"
)

// Task is the envelope a producer submits (SPEC §2). Zero values mean
// "absent" and let the server apply its default, except where a pointer is
// used because zero is a meaningful value.
type Task struct {
	// TaskID is optional; the server makes a UUIDv7 when empty.
	TaskID string
	// TaskType is required: ^[a-z0-9][a-z0-9_.-]{0,127}$.
	TaskType string
	// Queue is optional ("default"); same pattern as TaskType.
	Queue string
	// PayloadVersion is required, ≥ 1.
	PayloadVersion int
	// Payload is required and must encode to a JSON object (a struct, a map,
	// or a json.RawMessage holding an object).
	Payload any
	// ScheduleTime is optional: zero means now. Any non-zero time.Time is
	// zone-aware; it is sent as RFC 3339 in UTC ("…T04:45:00.000Z").
	ScheduleTime time.Time
	// Timeout is the longest one attempt may run (timeout_ms): zero means
	// the server default (30 s); otherwise 100 ms … 24 h in whole milliseconds.
	Timeout time.Duration
	// MaxRetries is optional (default 3), 0 … 100. Use Int(n).
	MaxRetries *int
	// Priority is optional (default 100), 0 … 1000, larger runs first. Use Int(n).
	Priority *int
	// TraceID is optional, 1–128 visible ASCII characters.
	TraceID string
	// IdempotencyKey is an optional business key, ≤ 200 characters.
	IdempotencyKey string
}

// Int returns a pointer to n, for Task.MaxRetries and Task.Priority.
func Int(n int) *int { return &n }

// Task statuses.
const (
	StatusScheduled = "scheduled"
	StatusPending   = "pending"
	StatusRunning   = "running"
	StatusRetrying  = "retrying"
	StatusSucceeded = "succeeded"
	StatusDead      = "dead"
	StatusCancelled = "cancelled"
)

// SubmitResult is the server's answer to one submitted task.
type SubmitResult struct {
	TaskID    string `json:"task_id"`
	Status    string `json:"status"`
	Duplicate bool   `json:"duplicate"`
}

// BatchResult is the outcome of one item of SubmitBatch: either a result or
// an error (a *ValidationError refused locally, or an *APIError from the
// server), each item judged alone.
type BatchResult struct {
	SubmitResult
	Err error
}

// TaskError is the error recorded for a failed attempt.
type TaskError struct {
	Type    string `json:"type"`
	Message string `json:"message"`
	Stack   string `json:"stack,omitempty"`
}

// TaskInfo is a task as the server reports it (GET /v1/tasks/{id}, and the
// task inside a Lease).
type TaskInfo struct {
	TaskID         string          `json:"task_id"`
	TaskType       string          `json:"task_type"`
	Queue          string          `json:"queue"`
	PayloadVersion int             `json:"payload_version"`
	Payload        json.RawMessage `json:"payload"`
	ScheduleTime   time.Time       `json:"schedule_time"`
	TimeoutMS      int64           `json:"timeout_ms"`
	MaxRetries     int             `json:"max_retries"`
	RetryCount     int             `json:"retry_count"`
	Priority       int             `json:"priority"`
	TraceID        string          `json:"trace_id"`
	IdempotencyKey string          `json:"idempotency_key,omitempty"`

	// Set by GET /v1/tasks/{id}.
	Status        string          `json:"status,omitempty"`
	CreatedAt     time.Time       `json:"created_at,omitempty"`
	UpdatedAt     time.Time       `json:"updated_at,omitempty"`
	NextAttemptAt *time.Time      `json:"next_attempt_at,omitempty"`
	Attempts      int             `json:"attempts,omitempty"`
	LastError     *TaskError      `json:"last_error,omitempty"`
	Result        json.RawMessage `json:"result,omitempty"`
	Deduplicated  bool            `json:"deduplicated,omitempty"`

	// Attempt is set in a lease: 1 for the first attempt.
	Attempt int `json:"attempt,omitempty"`
}

// Timeout is the task's timeout_ms as a duration.
func (t *TaskInfo) Timeout() time.Duration { return time.Duration(t.TimeoutMS) * time.Millisecond }

// Terminal reports whether the status is final (succeeded, dead, cancelled).
func (t *TaskInfo) Terminal() bool {
	switch t.Status {
	case StatusSucceeded, StatusDead, StatusCancelled:
		return true
	}
	return false
}

// Attempt is one entry of a task's attempt log. Outcome is empty while the
// attempt runs, else succeeded, failed, lease_expired or cancelled.
type Attempt struct {
	Attempt    int        `json:"attempt"`
	WorkerID   string     `json:"worker_id"`
	StartedAt  time.Time  `json:"started_at"`
	FinishedAt *time.Time `json:"finished_at"`
	Outcome    string     `json:"outcome"`
	Error      *TaskError `json:"error"`
	DurationMS *int64     `json:"duration_ms"`
}
