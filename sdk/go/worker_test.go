package madeira

import (
	"context"
	"encoding/json"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

func ok(ctx context.Context, l *Lease) (any, error) { return map[string]bool{"ok": true}, nil }

func closeWorker(t *testing.T, w *Worker, grace time.Duration) error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	return w.Close(ctx)
}

func submitOne(t *testing.T, c *Client, task Task) string {
	t.Helper()
	if task.Payload == nil {
		task.Payload = map[string]any{}
	}
	res, err := c.Submit(context.Background(), task)
	if err != nil {
		t.Fatal(err)
	}
	return res.TaskID
}

func TestWorkerRoutesOnlyItsPayloadVersions(t *testing.T) {
	c := testClient(t)
	queue := uniqueQueue("versions")
	v1 := submitOne(t, c, Task{TaskType: "order.placed", Queue: queue, PayloadVersion: 1})
	v2 := submitOne(t, c, Task{TaskType: "order.placed", Queue: queue, PayloadVersion: 2})

	var mu sync.Mutex
	var seen []int
	w := NewWorker(c, WorkerOptions{Queues: []string{queue}, Slots: 2, PollWait: 200 * time.Millisecond})
	w.Handle("order.placed", []int{1}, func(ctx context.Context, l *Lease) (any, error) {
		mu.Lock()
		seen = append(seen, l.Task.PayloadVersion)
		mu.Unlock()
		return nil, nil
	})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	waitTerminal(t, c, map[string]string{v1: "v1"}, 10*time.Second)
	time.Sleep(300 * time.Millisecond) // one more poll round: v2 must still not be handed out
	if err := closeWorker(t, w, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if task, _ := c.Get(context.Background(), v2); task.Status != StatusPending {
		t.Fatalf("version 2 task was handed to a version-1 worker: %+v", task)
	}
	mu.Lock()
	defer mu.Unlock()
	if len(seen) != 1 || seen[0] != 1 {
		t.Fatalf("handler saw versions %v", seen)
	}
}

func TestCloseWaitsForInFlightTasks(t *testing.T) {
	c := testClient(t)
	queue := uniqueQueue("graceful")
	id := submitOne(t, c, Task{TaskType: "slow", Queue: queue, PayloadVersion: 1})
	started := make(chan struct{})
	w := NewWorker(c, WorkerOptions{Queues: []string{queue}, Slots: 1, PollWait: 200 * time.Millisecond})
	w.Handle("slow", []int{1}, func(ctx context.Context, l *Lease) (any, error) {
		close(started)
		time.Sleep(300 * time.Millisecond)
		return map[string]string{"done": "yes"}, nil
	})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := closeWorker(t, w, 5*time.Second); err != nil {
		t.Fatalf("close: %v", err)
	}
	task, _ := c.Get(context.Background(), id)
	if task.Status != StatusSucceeded || string(task.Result) != `{"done":"yes"}` {
		t.Fatalf("in-flight task after close: %+v", task)
	}
}

func TestCloseHandsBackTasksAfterGrace(t *testing.T) {
	c := testClient(t)
	queue := uniqueQueue("handback")
	id := submitOne(t, c, Task{TaskType: "stuck", Queue: queue, PayloadVersion: 1})
	started := make(chan struct{})
	cause := make(chan error, 1)
	w := NewWorker(c, WorkerOptions{Queues: []string{queue}, Slots: 1, PollWait: 200 * time.Millisecond})
	w.Handle("stuck", []int{1}, func(ctx context.Context, l *Lease) (any, error) {
		close(started)
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return map[string]bool{"late": true}, nil
	})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	<-started
	if err := closeWorker(t, w, 200*time.Millisecond); !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("close after grace: %v", err)
	}
	if got := <-cause; !errors.Is(got, ErrWorkerClosed) {
		t.Fatalf("handler cause %v", got)
	}
	task, _ := c.Get(context.Background(), id)
	if task.Status != StatusPending || task.LastError == nil || task.LastError.Type != "WorkerClosed" {
		t.Fatalf("handed-back task: %+v", task)
	}
	attempts, _ := c.Attempts(context.Background(), id)
	if len(attempts) != 1 || attempts[0].Outcome != "failed" {
		t.Fatalf("attempts %+v", attempts)
	}
}

func TestLeaseIsExtendedWhileTheHandlerRuns(t *testing.T) {
	c := testClient(t)
	queue := uniqueQueue("extend")
	id := submitOne(t, c, Task{TaskType: "long", Queue: queue, PayloadVersion: 1, Timeout: 5 * time.Second})
	w := NewWorker(c, WorkerOptions{Queues: []string{queue}, Slots: 1, LeaseDuration: 300 * time.Millisecond,
		PollWait: 200 * time.Millisecond})
	w.Handle("long", []int{1}, func(ctx context.Context, l *Lease) (any, error) {
		select {
		case <-time.After(1200 * time.Millisecond): // four lease lengths
			return nil, nil
		case <-ctx.Done():
			return nil, context.Cause(ctx)
		}
	})
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	final := waitTerminal(t, c, map[string]string{id: "long"}, 10*time.Second)
	closeWorker(t, w, 5*time.Second)
	attempts, _ := c.Attempts(context.Background(), id)
	if final[id].Status != StatusSucceeded || len(attempts) != 1 {
		t.Fatalf("long task: %+v attempts %+v", final[id], attempts)
	}
}

func TestPanicAndPlainErrorsAreReported(t *testing.T) {
	c := testClient(t)
	queue := uniqueQueue("panic")
	p := submitOne(t, c, Task{TaskType: "explodes", Queue: queue, PayloadVersion: 1, MaxRetries: Int(0)})
	e := submitOne(t, c, Task{TaskType: "errs", Queue: queue, PayloadVersion: 1, MaxRetries: Int(0)})
	w := NewWorker(c, WorkerOptions{Queues: []string{queue}, Slots: 2, PollWait: 200 * time.Millisecond})
	w.Handle("explodes", []int{1}, func(ctx context.Context, l *Lease) (any, error) { panic("kaboom") })
	w.Handle("errs", []int{1}, func(ctx context.Context, l *Lease) (any, error) { return nil, io.ErrUnexpectedEOF })
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	final := waitTerminal(t, c, map[string]string{p: "explodes", e: "errs"}, 10*time.Second)
	closeWorker(t, w, 5*time.Second)
	if le := final[p].LastError; final[p].Status != StatusDead || le == nil || le.Type != "panic" || le.Message != "panic: kaboom" {
		t.Fatalf("panicking task: %+v", final[p])
	}
	if le := final[e].LastError; final[e].Status != StatusDead || le == nil || le.Type != "errors.errorString" {
		t.Fatalf("erring task: %+v", final[e])
	}
}

func TestHeartbeatReachesTheServer(t *testing.T) {
	c := testClient(t)
	w := NewWorker(c, WorkerOptions{Queues: []string{uniqueQueue("hb")}, PollWait: 200 * time.Millisecond})
	w.Handle("noop", []int{1}, ok)
	if err := w.Start(); err != nil {
		t.Fatal(err)
	}
	defer closeWorker(t, w, 5*time.Second)
	want := `worker_id="` + w.ID() + `"`
	for i := 0; i < 100; i++ {
		resp, err := http.Get(server.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		for _, line := range strings.Split(string(body), "\n") {
			if strings.HasPrefix(line, "madeira_worker_last_seen_timestamp_seconds") &&
				strings.Contains(line, want) && strings.Contains(line, `language="go"`) {
				return
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatal("the worker's heartbeat never showed in /metrics")
}

// countingTransport counts requests per path.
type countingTransport struct {
	mu    sync.Mutex
	paths map[string]int
	next  http.RoundTripper
}

func (ct *countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	ct.mu.Lock()
	p := r.URL.Path
	if strings.HasPrefix(p, "/v1/leases/") && p != "/v1/leases/ack" {
		p = "/v1/leases/{id}/" + p[strings.LastIndex(p, "/")+1:]
	}
	ct.paths[p]++
	ct.mu.Unlock()
	return ct.next.RoundTrip(r)
}

func TestAcksAreCoalesced(t *testing.T) {
	testClient(t)
	counter := &countingTransport{paths: map[string]int{}, next: newTransport(64)}
	c, _ := NewClient(server.URL, WithHTTPClient(&http.Client{Transport: counter}))
	queue := uniqueQueue("coalesce")
	const n = 500
	tasks := make([]Task, n)
	for i := range tasks {
		tasks[i] = Task{TaskType: "noop", Queue: queue, PayloadVersion: 1, Payload: map[string]int{}}
	}
	res, err := c.SubmitBatch(context.Background(), tasks)
	if err != nil {
		t.Fatal(err)
	}
	var done atomic.Int32
	w := NewWorker(c, WorkerOptions{Queues: []string{queue}, Slots: 64, PollWait: 200 * time.Millisecond})
	w.Handle("noop", []int{1}, func(ctx context.Context, l *Lease) (any, error) { done.Add(1); return nil, nil })
	w.Start()
	for i := 0; i < 400 && done.Load() < n; i++ {
		time.Sleep(25 * time.Millisecond)
	}
	closeWorker(t, w, 5*time.Second)
	last, _ := c.Get(context.Background(), res[n-1].TaskID)
	counter.mu.Lock()
	defer counter.mu.Unlock()
	if done.Load() != n || last.Status != StatusSucceeded {
		t.Fatalf("ran %d of %d; last task %s", done.Load(), n, last.Status)
	}
	if counter.paths["/v1/leases/{id}/ack"] != 0 || counter.paths["/v1/leases/ack"] >= n/4 {
		t.Fatalf("acks not coalesced: %v", counter.paths)
	}
	t.Logf("requests: %v", counter.paths)
}

// A 409 lease_lost on extend cancels the handler with ErrLeaseLost, and its
// result is not acked.
func TestLeaseLostCancelsTheHandler(t *testing.T) {
	var mu sync.Mutex
	calls := map[string]int{}
	leased := false
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		mu.Lock()
		calls[r.URL.Path]++
		first := !leased && r.URL.Path == "/v1/leases"
		if first {
			leased = true
		}
		mu.Unlock()
		w.Header().Set("Content-Type", "application/json")
		switch {
		case first:
			var req leaseRequest
			json.NewDecoder(r.Body).Decode(&req)
			if req.TaskTypes["lost"][0] != 1 || req.LeaseMS != 300 || req.MaxTasks != 2 {
				t.Errorf("lease request %+v", req)
			}
			io.WriteString(w, `{"leases":[{"lease_id":"L1","deadline":"2030-01-01T00:00:00.000Z","fencing_token":1,
				"task":{"task_id":"T1","task_type":"lost","queue":"q","payload_version":1,"payload":{},
				"timeout_ms":5000,"max_retries":3,"retry_count":0,"priority":100,"trace_id":"x","attempt":1}}]}`)
		case r.URL.Path == "/v1/leases":
			select {
			case <-time.After(100 * time.Millisecond):
			case <-r.Context().Done():
			}
			io.WriteString(w, `{"leases":[]}`)
		case strings.HasSuffix(r.URL.Path, "/extend"):
			w.WriteHeader(409)
			io.WriteString(w, `{"error":{"code":"lease_lost","message":"lease expired or superseded"}}`)
		default:
			io.WriteString(w, `{}`)
		}
	}))
	defer srv.Close()
	c, _ := NewClient(srv.URL)
	cause := make(chan error, 1)
	w := NewWorker(c, WorkerOptions{Queues: []string{"q"}, Slots: 2, LeaseDuration: 300 * time.Millisecond})
	w.Handle("lost", []int{1}, func(ctx context.Context, l *Lease) (any, error) {
		<-ctx.Done()
		cause <- context.Cause(ctx)
		return map[string]bool{"late": true}, nil
	})
	w.Start()
	select {
	case got := <-cause:
		if !errors.Is(got, ErrLeaseLost) {
			t.Fatalf("cause %v", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("handler never cancelled")
	}
	if err := closeWorker(t, w, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	mu.Lock()
	defer mu.Unlock()
	if calls["/v1/leases/L1/ack"]+calls["/v1/leases/ack"]+calls["/v1/leases/L1/fail"] != 0 {
		t.Fatalf("a lost lease was completed: %v", calls)
	}
	if calls["/v1/workers/heartbeat"] == 0 {
		t.Fatalf("no heartbeat: %v", calls)
	}
}

// The attempt's deadline is the server's (its first lease deadline minus
// lease_ms plus timeout_ms) when that beginning falls within the lease call,
// else timed from the lease's receipt.
func TestAttemptDeadlineIsTheServersWhenTheClocksAgree(t *testing.T) {
	const timeout, leaseFor = 2 * time.Second, 300 * time.Millisecond
	received := time.Now()
	asked := received.Add(-800 * time.Millisecond) // a long poll
	for _, c := range []struct {
		name      string
		deadline  time.Time // the lease's, as the server sent it
		remaining time.Duration
	}{
		{"began 200 ms before the answer was read", received.Add(leaseFor - 200*time.Millisecond), timeout - 200*time.Millisecond},
		{"began as the poll was sent", asked.Add(leaseFor), timeout - 800*time.Millisecond},
		{"server clock an hour ahead", received.Add(time.Hour), timeout},
		{"server clock an hour behind", received.Add(-time.Hour), timeout},
		{"server clock 2 s behind", received.Add(leaseFor - 2*time.Second), timeout},
		{"no deadline sent", time.Time{}, timeout},
	} {
		got := attemptDeadline(&Lease{Deadline: c.deadline}, leaseFor, timeout, asked, received).Sub(received)
		if d := got - c.remaining; d < -time.Millisecond || d > time.Millisecond {
			t.Errorf("%s: deadline %v after receipt, want %v", c.name, got, c.remaining)
		}
	}
}

// A handler's context ends at the server's deadline, not timeout_ms after the
// lease was read: a lease answered late leaves the handler less time.
func TestHandlerDeadlineIsTheServers(t *testing.T) {
	var once sync.Once
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		if r.URL.Path != "/v1/leases" {
			io.WriteString(w, `{}`)
			return
		}
		answered := false
		once.Do(func() {
			// The server began the attempt 500 ms before this answer.
			deadline := time.Now().Add(300*time.Millisecond - 500*time.Millisecond).UTC().Format(time.RFC3339Nano)
			io.WriteString(w, `{"leases":[{"lease_id":"L1","deadline":"`+deadline+`","fencing_token":1,
				"task":{"task_id":"T1","task_type":"late","queue":"q","payload_version":1,"payload":{},
				"timeout_ms":3000,"max_retries":3,"retry_count":0,"priority":100,"trace_id":"x","attempt":1}}]}`)
			answered = true
		})
		if !answered {
			select {
			case <-time.After(100 * time.Millisecond):
			case <-r.Context().Done():
			}
			io.WriteString(w, `{"leases":[]}`)
		}
	}))
	defer srv.Close()
	c, _ := NewClient(srv.URL)
	left := make(chan time.Duration, 1)
	w := NewWorker(c, WorkerOptions{Queues: []string{"q"}, Slots: 1, LeaseDuration: 300 * time.Millisecond})
	w.Handle("late", []int{1}, func(ctx context.Context, l *Lease) (any, error) {
		d, _ := ctx.Deadline()
		left <- time.Until(d)
		return nil, nil
	})
	w.Start()
	select {
	case got := <-left:
		if got > 2600*time.Millisecond || got < 2000*time.Millisecond {
			t.Fatalf("handler has %v left of a 3 s attempt the server began 500 ms earlier", got)
		}
	case <-time.After(5 * time.Second):
		t.Fatal("handler never ran")
	}
	if err := closeWorker(t, w, 5*time.Second); err != nil {
		t.Fatal(err)
	}
}

func TestHandleRefusesBadRegistrations(t *testing.T) {
	c, _ := NewClient("http://127.0.0.1:1")
	w := NewWorker(c, WorkerOptions{Queues: []string{"q"}})
	mustPanic := func(name string, f func()) {
		t.Helper()
		defer func() {
			if recover() == nil {
				t.Errorf("%s: no panic", name)
			}
		}()
		f()
	}
	mustPanic("bad type", func() { w.Handle("Bad", []int{1}, ok) })
	mustPanic("no versions", func() { w.Handle("a", nil, ok) })
	mustPanic("version 0", func() { w.Handle("a", []int{0}, ok) })
	w.Handle("a", []int{1, 2}, ok)
	mustPanic("twice", func() { w.Handle("a", []int{3}, ok) })
	if err := NewWorker(c, WorkerOptions{Queues: []string{"q"}}).Start(); err == nil {
		t.Error("started without handlers")
	}
	if err := closeWorker(t, w, time.Second); err != nil {
		t.Errorf("close of a never-started worker: %v", err)
	}
}
