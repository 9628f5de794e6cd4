package madeira

import (
	"errors"
	"fmt"
	"time"
)

// ValidationError is returned when an envelope is refused locally, before
// anything is sent. Code is the code the server would answer with
// (missing_field, invalid_field, unknown_field, invalid_schedule_time,
// payload_too_deep, payload_too_large); Field names the field to blame.
type ValidationError struct {
	Field   string
	Code    string
	Message string
}

func (e *ValidationError) Error() string {
	return fmt.Sprintf("madeira: invalid %s (%s): %s", e.Field, e.Code, e.Message)
}

func invalid(field, code, format string, args ...any) *ValidationError {
	return &ValidationError{Field: field, Code: code, Message: fmt.Sprintf(format, args...)}
}

// APIError is a non-2xx answer from the server, surfaced unchanged: the HTTP
// status and the body's error code, message and field.
type APIError struct {
	Status  int
	Code    string
	Message string
	Field   string
	// RetryAfter is the server's Retry-After (503 unavailable), zero if none.
	RetryAfter time.Duration
}

func (e *APIError) Error() string {
	if e.Field != "" {
		return fmt.Sprintf("madeira: %d %s (field %s): %s", e.Status, e.Code, e.Field, e.Message)
	}
	return fmt.Sprintf("madeira: %d %s: %s", e.Status, e.Code, e.Message)
}

// IsCode reports whether err is (or wraps) an APIError with the given code.
func IsCode(err error, code string) bool {
	var api *APIError
	return errors.As(err, &api) && api.Code == code
}

// PermanentError marks a handler failure that must not be retried: the task
// is failed with retry "never" and goes dead at once.
type PermanentError struct{ Err error }

func (e *PermanentError) Error() string { return e.Err.Error() }
func (e *PermanentError) Unwrap() error { return e.Err }

// Permanent wraps err so the worker fails the task with retry "never".
func Permanent(err error) error {
	if err == nil {
		return nil
	}
	return &PermanentError{Err: err}
}

// TransientError marks a handler failure worth retrying at once (a network
// blip, a lock conflict): the task is failed with retry "fast".
type TransientError struct{ Err error }

func (e *TransientError) Error() string { return e.Err.Error() }
func (e *TransientError) Unwrap() error { return e.Err }

// Transient wraps err so the worker fails the task with retry "fast".
func Transient(err error) error {
	if err == nil {
		return nil
	}
	return &TransientError{Err: err}
}

// Causes of a handler's context cancellation; read them with context.Cause.
var (
	// ErrTaskDeadline: the task's timeout_ms passed. The worker stops
	// extending the lease and does not ack the late result; the server
	// records the attempt as lease_expired.
	ErrTaskDeadline = errors.New("madeira: task deadline passed")
	// ErrLeaseLost: the server answered 409 lease_lost to an extend or ack;
	// another worker may now hold the task.
	ErrLeaseLost = errors.New("madeira: lease lost")
	// ErrWorkerClosed: the worker's grace period ran out during Close; the
	// task was handed back with retry "fast".
	ErrWorkerClosed = errors.New("madeira: worker closed")
)
