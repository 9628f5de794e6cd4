package madeira

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"testing"
	"time"
)

type scenarioSpec struct {
	QueuePrefix string `json:"queue_prefix"`
	Slots       int    `json:"slots"`
	Tasks       struct {
		OK struct {
			Count      int    `json:"count"`
			TaskType   string `json:"task_type"`
			Priorities []int  `json:"priorities"`
		} `json:"ok"`
		Delayed struct {
			TaskType string `json:"task_type"`
			DelayMS  int    `json:"delay_ms"`
		} `json:"delayed"`
		TransientOnce struct {
			TaskType string `json:"task_type"`
			Times    int    `json:"times"`
		} `json:"transient_once"`
		Permanent struct {
			TaskType string `json:"task_type"`
		} `json:"permanent"`
		Sleeper struct {
			TaskType   string `json:"task_type"`
			TimeoutMS  int    `json:"timeout_ms"`
			MaxRetries int    `json:"max_retries"`
			SleepsMS   int    `json:"sleeps_ms"`
		} `json:"sleeper"`
	} `json:"tasks"`
	Expect map[string]struct {
		Status   string   `json:"status"`
		Attempts int      `json:"attempts"`
		Outcomes []string `json:"outcomes"`
	} `json:"expect"`
}

// runs records every handler start per task.
type runs struct {
	mu      sync.Mutex
	starts  map[string][]time.Time
	sleeper []error // context causes seen by the sleeper
}

func (r *runs) start(id string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.starts[id] = append(r.starts[id], time.Now())
	return len(r.starts[id])
}

func (r *runs) of(id string) []time.Time {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]time.Time(nil), r.starts[id]...)
}

// TestConformanceScenario runs sdk/testdata/scenario.md against a real server.
func TestConformanceScenario(t *testing.T) {
	var sc scenarioSpec
	readVector(t, "scenario.json", &sc)
	c := testClient(t)
	ctx := context.Background()
	queue := uniqueQueue(sc.QueuePrefix)

	// 1. Produce.
	var batch []Task
	for i := 0; i < sc.Tasks.OK.Count; i++ {
		p := sc.Tasks.OK.Priorities[i%len(sc.Tasks.OK.Priorities)]
		batch = append(batch, Task{TaskType: sc.Tasks.OK.TaskType, Queue: queue, PayloadVersion: 1,
			Payload: map[string]int{"n": i}, Priority: Int(p)})
	}
	results, err := c.SubmitBatch(ctx, batch)
	if err != nil {
		t.Fatal(err)
	}
	typeOf := map[string]string{}
	var okIDs []string
	for i, r := range results {
		if r.Err != nil || r.Duplicate || r.TaskID == "" {
			t.Fatalf("batch item %d: %+v", i, r)
		}
		okIDs = append(okIDs, r.TaskID)
		typeOf[r.TaskID] = sc.Tasks.OK.TaskType
	}
	submit := func(task Task) string {
		t.Helper()
		task.Queue, task.PayloadVersion = queue, 1
		if task.Payload == nil {
			task.Payload = map[string]any{}
		}
		res, err := c.Submit(ctx, task)
		if err != nil {
			t.Fatalf("submit %s: %v", task.TaskType, err)
		}
		typeOf[res.TaskID] = task.TaskType
		return res.TaskID
	}
	scheduledAt := time.Now().Add(time.Duration(sc.Tasks.Delayed.DelayMS) * time.Millisecond)
	delayedID := submit(Task{TaskType: sc.Tasks.Delayed.TaskType, ScheduleTime: scheduledAt})
	transientID := submit(Task{TaskType: sc.Tasks.TransientOnce.TaskType})
	permanentID := submit(Task{TaskType: sc.Tasks.Permanent.TaskType})
	sleeperID := submit(Task{TaskType: sc.Tasks.Sleeper.TaskType,
		Timeout:    time.Duration(sc.Tasks.Sleeper.TimeoutMS) * time.Millisecond,
		MaxRetries: Int(sc.Tasks.Sleeper.MaxRetries)})

	// 2. Work.
	r := &runs{starts: map[string][]time.Time{}}
	w := NewWorker(c, WorkerOptions{Queues: []string{queue}, Slots: sc.Slots, PollWait: time.Second})
	record := func(ctx context.Context, l *Lease) (any, error) {
		r.start(l.Task.TaskID)
		return map[string]bool{"ok": true}, nil
	}
	w.Handle(sc.Tasks.OK.TaskType, []int{1}, record)
	w.Handle(sc.Tasks.Delayed.TaskType, []int{1}, record)
	w.Handle(sc.Tasks.TransientOnce.TaskType, []int{1}, func(ctx context.Context, l *Lease) (any, error) {
		if r.start(l.Task.TaskID) <= sc.Tasks.TransientOnce.Times {
			return nil, Transient(errors.New("lock conflict"))
		}
		return map[string]bool{"ok": true}, nil
	})
	w.Handle(sc.Tasks.Permanent.TaskType, []int{1}, func(ctx context.Context, l *Lease) (any, error) {
		r.start(l.Task.TaskID)
		return nil, Permanent(errors.New("order does not exist"))
	})
	w.Handle(sc.Tasks.Sleeper.TaskType, []int{1}, func(ctx context.Context, l *Lease) (any, error) {
		r.start(l.Task.TaskID)
		select {
		case <-time.After(time.Duration(sc.Tasks.Sleeper.SleepsMS) * time.Millisecond):
			return map[string]bool{"late": true}, nil
		case <-ctx.Done():
			r.mu.Lock()
			r.sleeper = append(r.sleeper, context.Cause(ctx))
			r.mu.Unlock()
			return nil, ctx.Err()
		}
	})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}

	// 3. Wait (bounded) until every task is terminal, then close gracefully.
	final := waitTerminal(t, c, typeOf, 30*time.Second)
	closeCtx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	if err := w.Close(closeCtx); err != nil {
		t.Fatalf("graceful close: %v", err)
	}

	// 4. Assert.
	expect := func(id string) {
		t.Helper()
		typ := typeOf[id]
		want := sc.Expect[typ]
		got := final[id]
		if got.Status != want.Status || got.Attempts != want.Attempts {
			t.Errorf("%s %s: status %s attempts %d, want %s %d", typ, id, got.Status, got.Attempts, want.Status, want.Attempts)
		}
		if want.Outcomes == nil {
			return
		}
		attempts, err := c.Attempts(ctx, id)
		if err != nil {
			t.Fatal(err)
		}
		var outcomes []string
		for _, a := range attempts {
			outcomes = append(outcomes, a.Outcome)
		}
		if fmt.Sprint(outcomes) != fmt.Sprint(want.Outcomes) {
			t.Errorf("%s %s: outcomes %v, want %v", typ, id, outcomes, want.Outcomes)
		}
	}
	for _, id := range okIDs {
		expect(id)
		if n := len(r.of(id)); n != 1 {
			t.Errorf("scenario.ok %s: handler ran %d times", id, n)
		}
	}

	expect(delayedID)
	delayed := final[delayedID]
	starts := r.of(delayedID)
	if len(starts) != 1 {
		t.Fatalf("delayed handler ran %d times", len(starts))
	}
	if starts[0].Before(delayed.ScheduleTime) || starts[0].Before(scheduledAt.Truncate(time.Millisecond)) {
		t.Errorf("delayed task started at %v, before its schedule_time %v (asked %v)", starts[0], delayed.ScheduleTime, scheduledAt)
	}
	if d := delayed.ScheduleTime.Sub(scheduledAt); d > time.Millisecond || d < -time.Millisecond {
		t.Errorf("server schedule_time %v differs from the one sent %v", delayed.ScheduleTime, scheduledAt)
	}

	expect(transientID)
	if n := len(r.of(transientID)); n != 2 {
		t.Errorf("transient handler ran %d times, want 2", n)
	}
	if attempts, _ := c.Attempts(ctx, transientID); len(attempts) == 2 {
		if e := attempts[0].Error; e == nil || e.Type != "TransientError" {
			t.Errorf("transient first attempt error %+v", e)
		}
		// A fast retry is re-queued at once: no back-off (≥ 30 s) in between.
		if gap := attempts[1].StartedAt.Sub(*attempts[0].FinishedAt); gap > 5*time.Second {
			t.Errorf("transient retried after %v: not a fast retry", gap)
		}
	}

	expect(permanentID)
	if e := final[permanentID].LastError; e == nil || e.Type != "PermanentError" || e.Message != "order does not exist" {
		t.Errorf("permanent last_error %+v", e)
	}
	if n := len(r.of(permanentID)); n != 1 {
		t.Errorf("permanent handler ran %d times", n)
	}

	expect(sleeperID)
	if n := len(r.of(sleeperID)); n != 1 {
		t.Errorf("sleeper handler ran %d times", n)
	}
	r.mu.Lock()
	causes := r.sleeper
	r.mu.Unlock()
	if len(causes) != 1 || !errors.Is(causes[0], ErrTaskDeadline) {
		t.Errorf("sleeper's context causes %v, want [ErrTaskDeadline]", causes)
	}
	if res := final[sleeperID].Result; len(res) != 0 && string(res) != "null" {
		t.Errorf("sleeper's late result was acked: %s", res)
	}
}

// waitTerminal polls (bounded) until every task is succeeded, dead or cancelled.
func waitTerminal(t *testing.T, c *Client, ids map[string]string, limit time.Duration) map[string]*TaskInfo {
	t.Helper()
	final := map[string]*TaskInfo{}
	stop := time.Now().Add(limit)
	for len(final) < len(ids) {
		if time.Now().After(stop) {
			for id := range ids {
				if final[id] == nil {
					task, _ := c.Get(context.Background(), id)
					t.Errorf("not terminal after %v: %s %+v", limit, ids[id], task)
				}
			}
			t.FailNow()
		}
		for id := range ids {
			if final[id] != nil {
				continue
			}
			task, err := c.Get(context.Background(), id)
			if err != nil {
				t.Fatal(err)
			}
			if task.Terminal() {
				final[id] = task
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	return final
}
