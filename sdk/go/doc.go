// Package madeira is the Go SDK for Madeira, the task dispatcher that gives
// services in every language one set of task semantics over a small HTTP
// protocol (see docs/protocol.md in the Madeira repository).
//
// It has three parts:
//
//   - [Client]: the producer side — submit one task or a batch, read a task
//     and its attempt log, cancel a task. Envelopes are checked locally before
//     anything is sent ([ValidationError]); what only the server can judge comes
//     back unchanged as an [APIError].
//   - [Worker]: leases tasks for the handlers registered per task type and
//     payload version, runs them in N concurrent slots, extends leases while
//     they run, acknowledges results in batches, and reports failures with the
//     retry tier chosen by the error class ([PermanentError], [TransientError]).
//   - Signatures: [SignEvent] for POST /v1/events, and [WebhookVerifier] for
//     receivers of Standard Webhooks deliveries.
//
// Times: Go's time.Time always carries a location, so every non-zero
// time.Time is zone-aware; Task.ScheduleTime is sent as RFC 3339 in UTC with
// milliseconds ("2025-09-11T04:45:00.000Z"). There is deliberately no API that
// takes a schedule time as a number or a string without an offset.
package madeira

// Version is the SDK version reported in worker heartbeats.
const Version = "0.1.0"
