package madeira

import (
	"context"
	"net/url"
)

// maxBatch is the largest batch the server takes in one request.
const maxBatch = 1000

// Submit validates t locally and submits it (POST /v1/tasks). A duplicate
// (same task_id, same content) is answered with Duplicate set.
func (c *Client) Submit(ctx context.Context, t Task) (*SubmitResult, error) {
	w, err := t.wire(c.limits)
	if err != nil {
		return nil, err
	}
	var res SubmitResult
	if err := c.do(ctx, "POST", "/v1/tasks", w, &res); err != nil {
		return nil, err
	}
	return &res, nil
}

// SubmitBatch submits many tasks through POST /v1/tasks/batch, in requests of
// up to 1000. Each item is judged alone: results[i] belongs to tasks[i] and
// carries either the server's answer or an error (*ValidationError when
// refused locally — such items are not sent — or *APIError from the server).
// The returned error is set only when a whole request failed.
func (c *Client) SubmitBatch(ctx context.Context, tasks []Task) ([]BatchResult, error) {
	results := make([]BatchResult, len(tasks))
	wires := make([]*wireTask, 0, min(len(tasks), maxBatch))
	index := make([]int, 0, cap(wires))
	flush := func() error {
		if len(wires) == 0 {
			return nil
		}
		var out struct {
			Results []struct {
				SubmitResult
				Error *struct {
					Code    string `json:"code"`
					Message string `json:"message"`
					Field   string `json:"field"`
				} `json:"error"`
			} `json:"results"`
		}
		if err := c.do(ctx, "POST", "/v1/tasks/batch", map[string]any{"tasks": wires}, &out); err != nil {
			return err
		}
		for j, r := range out.Results {
			if j >= len(index) {
				break
			}
			i := index[j]
			if r.Error != nil {
				results[i].Err = &APIError{Status: statusOfCode(r.Error.Code), Code: r.Error.Code, Message: r.Error.Message, Field: r.Error.Field}
			} else {
				results[i].SubmitResult = r.SubmitResult
			}
		}
		wires, index = wires[:0], index[:0]
		return nil
	}
	for i := range tasks {
		w, err := tasks[i].wire(c.limits)
		if err != nil {
			results[i].Err = err
			continue
		}
		wires = append(wires, w)
		index = append(index, i)
		if len(wires) == maxBatch {
			if err := flush(); err != nil {
				return results, err
			}
		}
	}
	return results, flush()
}

// Get reads a task with its status, attempts count, last error and result.
func (c *Client) Get(ctx context.Context, taskID string) (*TaskInfo, error) {
	var t TaskInfo
	if err := c.do(ctx, "GET", "/v1/tasks/"+url.PathEscape(taskID), nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}

// Attempts reads a task's attempt log, oldest first.
func (c *Client) Attempts(ctx context.Context, taskID string) ([]Attempt, error) {
	var out struct {
		Attempts []Attempt `json:"attempts"`
	}
	if err := c.do(ctx, "GET", "/v1/tasks/"+url.PathEscape(taskID)+"/attempts", nil, &out); err != nil {
		return nil, err
	}
	return out.Attempts, nil
}

// Cancel cancels a scheduled, pending, retrying or dead task. A running task
// is refused with 409 task_running, a finished one with 409 task_terminal.
func (c *Client) Cancel(ctx context.Context, taskID string) (*TaskInfo, error) {
	var t TaskInfo
	if err := c.do(ctx, "POST", "/v1/tasks/"+url.PathEscape(taskID)+"/cancel", nil, &t); err != nil {
		return nil, err
	}
	return &t, nil
}
