package madeira

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"
)

// Every valid vector is accepted by the server as the SDK sends it, and
// every server-only invalid vector comes back as an APIError with the
// server's code and field unchanged.
func TestEnvelopeVectorsAgainstServer(t *testing.T) {
	c := testClient(t)
	ctx := context.Background()
	var v envelopeVectors
	readVector(t, "envelopes.json", &v)
	for _, vc := range v.Valid {
		task, err := ParseTask(vc.Envelope)
		if err != nil {
			t.Fatalf("%s: %v", vc.Name, err)
		}
		if task.TaskID != "" {
			task.TaskID += "-" + uniqueQueue("x") // fresh ids, so reruns don't conflict
			if len(task.TaskID) > 128 {
				task.TaskID = task.TaskID[len(task.TaskID)-128:]
			}
		}
		if _, err := c.Submit(ctx, *task); err != nil {
			t.Errorf("%s: server refused a valid envelope: %v", vc.Name, err)
		}
	}
	for _, ic := range v.Invalid {
		if !ic.ServerOnly {
			continue
		}
		task, err := ParseTask(ic.Envelope)
		if err != nil {
			t.Fatalf("%s: refused locally: %v", ic.Name, err)
		}
		_, err = c.Submit(ctx, *task)
		var api *APIError
		if !errors.As(err, &api) || api.Status != 400 || api.Code != ic.Code || api.Field != ic.Field {
			t.Errorf("%s: got %v, want 400 %s field %s", ic.Name, err, ic.Code, ic.Field)
		}
		if api != nil && api.Message == "" {
			t.Errorf("%s: server message lost", ic.Name)
		}
	}
}

func TestSubmitGetCancelAndDuplicates(t *testing.T) {
	c := testClient(t)
	ctx := context.Background()
	queue := uniqueQueue("producer")
	id := uniqueQueue("task")
	at := time.Now().Add(time.Hour).In(time.FixedZone("X", -3*3600-1800))
	task := Task{TaskID: id, TaskType: "order.close_timeout", Queue: queue, PayloadVersion: 1,
		Payload: map[string]any{"order_id": 7}, ScheduleTime: at, Timeout: 2 * time.Second,
		MaxRetries: Int(0), Priority: Int(0), TraceID: "trace-go-1", IdempotencyKey: "k:" + id}
	res, err := c.Submit(ctx, task)
	if err != nil || res.TaskID != id || res.Status != StatusScheduled || res.Duplicate {
		t.Fatalf("submit: %+v %v", res, err)
	}
	again, err := c.Submit(ctx, task)
	if err != nil || !again.Duplicate || again.TaskID != id {
		t.Fatalf("duplicate: %+v %v", again, err)
	}
	task.Payload = map[string]any{"order_id": 8}
	if _, err := c.Submit(ctx, task); !IsCode(err, "task_id_conflict") {
		t.Fatalf("conflict: %v", err)
	}

	got, err := c.Get(ctx, id)
	if err != nil {
		t.Fatal(err)
	}
	if !got.ScheduleTime.Equal(at.Truncate(time.Millisecond)) || got.TimeoutMS != 2000 || got.MaxRetries != 0 ||
		got.Priority != 0 || got.TraceID != "trace-go-1" || got.IdempotencyKey != "k:"+id || got.Queue != queue {
		t.Fatalf("get: %+v", got)
	}
	cancelled, err := c.Cancel(ctx, id)
	if err != nil || cancelled.Status != StatusCancelled {
		t.Fatalf("cancel: %+v %v", cancelled, err)
	}
	var api *APIError
	if _, err := c.Cancel(ctx, id); !errors.As(err, &api) || api.Status != 409 || api.Code != "task_terminal" {
		t.Fatalf("cancel again: %v", err)
	}
	if _, err := c.Get(ctx, "no-such-task"); !errors.As(err, &api) || api.Status != 404 || api.Code != "not_found" {
		t.Fatalf("get missing: %v", err)
	}
}

func TestSubmitBatchJudgesEachItem(t *testing.T) {
	c := testClient(t)
	queue := uniqueQueue("batch")
	far := time.Now().Add(1000 * 24 * time.Hour)
	tasks := []Task{
		{TaskType: "a", Queue: queue, PayloadVersion: 1, Payload: map[string]int{}},
		{TaskType: "Bad", Queue: queue, PayloadVersion: 1, Payload: map[string]int{}},                  // refused locally
		{TaskType: "a", Queue: queue, PayloadVersion: 1, Payload: map[string]int{}, ScheduleTime: far}, // by the server
		{TaskType: "a", Queue: queue, PayloadVersion: 1, Payload: map[string]int{}},
	}
	res, err := c.SubmitBatch(context.Background(), tasks)
	if err != nil {
		t.Fatal(err)
	}
	var ve *ValidationError
	var api *APIError
	switch {
	case res[0].Err != nil || res[0].TaskID == "" || res[3].Err != nil || res[3].TaskID == "":
		t.Fatalf("good items: %+v", res)
	case !errors.As(res[1].Err, &ve) || ve.Field != "task_type":
		t.Fatalf("local refusal: %+v", res[1])
	case !errors.As(res[2].Err, &api) || api.Code != "schedule_too_far" || api.Field != "schedule_time":
		t.Fatalf("server refusal: %+v", res[2])
	}
}

func TestSubmitBatchSplitsAt1000(t *testing.T) {
	c := testClient(t)
	queue := uniqueQueue("bigbatch")
	tasks := make([]Task, 1500)
	for i := range tasks {
		tasks[i] = Task{TaskType: "a", Queue: queue, PayloadVersion: 1, Payload: map[string]int{"i": i}}
	}
	res, err := c.SubmitBatch(context.Background(), tasks)
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]bool{}
	for i, r := range res {
		if r.Err != nil || r.TaskID == "" || seen[r.TaskID] {
			t.Fatalf("item %d: %+v", i, r)
		}
		seen[r.TaskID] = true
	}
}

func TestLocalRefusalSendsNothing(t *testing.T) {
	requests := 0
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { requests++ }))
	defer srv.Close()
	c, _ := NewClient(srv.URL)
	_, err := c.Submit(context.Background(), Task{TaskType: "t", PayloadVersion: 1, Payload: []int{1}})
	var ve *ValidationError
	if !errors.As(err, &ve) || requests != 0 {
		t.Fatalf("err %v, %d requests", err, requests)
	}
}

func TestBearerTokenAndErrorSurfacing(t *testing.T) {
	var auth string
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		auth = r.Header.Get("Authorization")
		w.Header().Set("Retry-After", "3")
		w.WriteHeader(503)
		w.Write([]byte(`{"error":{"code":"unavailable","message":"store down"}}`))
	}))
	defer srv.Close()
	c, _ := NewClient(srv.URL, WithToken("s3cret"))
	_, err := c.Get(context.Background(), "x")
	var api *APIError
	if !errors.As(err, &api) || api.Status != 503 || api.Code != "unavailable" || api.Message != "store down" || api.RetryAfter != 3*time.Second {
		t.Fatalf("got %#v", err)
	}
	if auth != "Bearer s3cret" {
		t.Fatalf("Authorization %q", auth)
	}
	if _, err := NewClient("127.0.0.1:8080"); err == nil {
		t.Fatal("a base URL without scheme was accepted")
	}
}
