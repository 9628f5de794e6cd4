package madeira

import (
	"context"
	"encoding/json"
	"net/url"
	"time"
)

// Lease is one task handed to this worker: only the current lease can ack,
// fail or extend the task (fencing).
type Lease struct {
	ID           string    `json:"lease_id"`
	Deadline     time.Time `json:"deadline"`
	FencingToken int64     `json:"fencing_token"`
	Task         TaskInfo  `json:"task"`
}

// Bind decodes the task's payload into v.
func (l *Lease) Bind(v any) error { return json.Unmarshal(l.Task.Payload, v) }

// Retry tiers for a failed attempt.
const (
	RetryAuto    = "auto"
	RetryFast    = "fast"
	RetryBackoff = "backoff"
	RetryNever   = "never"
)

type leaseRequest struct {
	WorkerID  string           `json:"worker_id"`
	Queues    []string         `json:"queues"`
	TaskTypes map[string][]int `json:"task_types,omitempty"`
	MaxTasks  int              `json:"max_tasks"`
	WaitMS    int64            `json:"wait_ms"`
	LeaseMS   int64            `json:"lease_ms,omitempty"`
}

type ackItem struct {
	LeaseID string          `json:"lease_id"`
	Result  json.RawMessage `json:"result,omitempty"`
}

type ackOutcome struct {
	LeaseID string `json:"lease_id"`
	Status  string `json:"status"`
	Error   *struct {
		Code    string `json:"code"`
		Message string `json:"message"`
	} `json:"error"`
}

type failRequest struct {
	Error        TaskError `json:"error"`
	Retry        string    `json:"retry"`
	RetryAfterMS int64     `json:"retry_after_ms,omitempty"`
}

type heartbeat struct {
	WorkerID   string   `json:"worker_id"`
	Language   string   `json:"language"`
	SDKVersion string   `json:"sdk_version"`
	Queues     []string `json:"queues"`
}

// The worker protocol, one method per route.

func (c *Client) lease(ctx context.Context, req *leaseRequest) ([]Lease, error) {
	var out struct {
		Leases []Lease `json:"leases"`
	}
	err := c.do(ctx, "POST", "/v1/leases", req, &out)
	return out.Leases, err
}

func (c *Client) ackBatch(ctx context.Context, acks []ackItem) ([]ackOutcome, error) {
	var out struct {
		Results []ackOutcome `json:"results"`
	}
	err := c.do(ctx, "POST", "/v1/leases/ack", map[string]any{"acks": acks}, &out)
	return out.Results, err
}

func (c *Client) fail(ctx context.Context, leaseID string, req *failRequest) error {
	return c.do(ctx, "POST", "/v1/leases/"+url.PathEscape(leaseID)+"/fail", req, nil)
}

func (c *Client) extend(ctx context.Context, leaseID string, by time.Duration) (time.Time, error) {
	var out struct {
		Deadline time.Time `json:"deadline"`
	}
	err := c.do(ctx, "POST", "/v1/leases/"+url.PathEscape(leaseID)+"/extend",
		map[string]int64{"extend_ms": by.Milliseconds()}, &out)
	return out.Deadline, err
}

func (c *Client) heartbeat(ctx context.Context, hb *heartbeat) error {
	return c.do(ctx, "POST", "/v1/workers/heartbeat", hb, nil)
}
