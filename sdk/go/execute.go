package madeira

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime/debug"
	"strings"
	"sync"
	"sync/atomic"
	"time"
)

// Execution states: a running execution is reported exactly once, either by
// its own goroutine (finished) or by Close's hand-back (abandoned).
const (
	execRunning int32 = iota
	execFinished
	execAbandoned
)

type execution struct {
	lease    *Lease
	state    atomic.Int32
	cancel   context.CancelCauseFunc
	slotOnce sync.Once
	doneOnce sync.Once
	w        *Worker
}

// freeSlot lets the worker lease another task in this execution's slot.
func (ex *execution) freeSlot() { ex.slotOnce.Do(func() { ex.w.release(1) }) }

// done frees the slot (if not yet) and marks the task reported.
func (ex *execution) done() {
	ex.freeSlot()
	ex.doneOnce.Do(ex.w.tasks.Done)
}

// execute runs the handler for one lease and reports the outcome: an ack
// (batched), a fail with the retry tier of the error, or nothing when the
// deadline passed or the lease was lost (the server records lease_expired).
func (w *Worker) execute(lease *Lease, asked, received time.Time) {
	ex := &execution{lease: lease, w: w}
	timeout := lease.Task.Timeout()
	if timeout <= 0 {
		timeout = 30 * time.Second
	}
	leaseFor := w.leaseFor(timeout)
	deadline := attemptDeadline(lease, leaseFor, timeout, asked, received)
	ctx, cancel := context.WithCancelCause(w.hardCtx)
	ctx, cancelDeadline := context.WithDeadlineCause(ctx, deadline, ErrTaskDeadline)
	defer cancelDeadline()
	defer cancel(nil)
	ex.cancel = cancel

	w.mu.Lock()
	w.running[ex] = struct{}{}
	w.mu.Unlock()

	stopExtending := w.extendWhileRunning(ctx, ex, leaseFor, deadline)
	result, err := w.call(ctx, lease)
	stopExtending()
	handlerCtxErr := ctx.Err()

	w.mu.Lock()
	delete(w.running, ex)
	w.mu.Unlock()
	if !ex.state.CompareAndSwap(execRunning, execFinished) {
		return // handed back by Close, which reports it
	}
	if handlerCtxErr != nil {
		w.log.Warn("madeira: task not completed", "task_id", lease.Task.TaskID,
			"lease_id", lease.ID, "cause", context.Cause(ctx))
		ex.done()
		return
	}
	if err != nil {
		w.reportFailure(ex, err)
		return
	}
	var raw json.RawMessage
	if result != nil {
		if raw, err = json.Marshal(result); err != nil {
			w.reportFailure(ex, fmt.Errorf("encode result: %w", err))
			return
		}
	}
	// The slot is free once the handler returned; the ack is batched.
	ex.freeSlot()
	w.acks <- pendingAck{ex: ex, item: ackItem{LeaseID: lease.ID, Result: raw}}
}

// call runs the handler, turning a panic into an error.
func (w *Worker) call(ctx context.Context, lease *Lease) (result any, err error) {
	h := w.handlers[lease.Task.TaskType]
	if h == nil {
		return nil, fmt.Errorf("no handler for task type %q", lease.Task.TaskType)
	}
	defer func() {
		if v := recover(); v != nil {
			err = &panicError{value: v, stack: string(debug.Stack())}
		}
	}()
	return h(ctx, lease)
}

type panicError struct {
	value any
	stack string
}

func (p *panicError) Error() string { return fmt.Sprintf("panic: %v", p.value) }

// leaseFor is the lease_ms this worker asks for: LeaseDuration, or the task's
// timeout when unset or longer (the server's upper bound).
func (w *Worker) leaseFor(timeout time.Duration) time.Duration {
	if d := w.opts.LeaseDuration; d > 0 && d < timeout {
		return d
	}
	return timeout
}

// attemptDeadline is when the server ends this attempt: it never extends a
// lease past timeout_ms after the attempt began, and the lease's first
// deadline is that beginning + leaseFor. The attempt began during the lease
// call, so a beginning within [asked - 1 s, received] means the clocks agree
// and it is used: timing from the lease's receipt would be up to a round trip
// late, and an extend in that window would report a deadline as a lost lease.
// Outside it the clocks disagree (a server clock behind would otherwise end
// every attempt at once), and the deadline is timed from the receipt. The
// Java SDK's attemptStart keeps the same rule.
func attemptDeadline(lease *Lease, leaseFor, timeout time.Duration, asked, received time.Time) time.Time {
	began := lease.Deadline.Add(-leaseFor)
	if lease.Deadline.IsZero() || began.Before(asked.Add(-time.Second)) || began.After(received) {
		return received.Add(timeout)
	}
	return received.Add(timeout - received.Sub(began)) // keeps received's monotonic reading
}

// extendWhileRunning extends the lease every lease_ms/3 until stopped or the
// task's deadline; a 409 lease_lost cancels the handler with ErrLeaseLost, or
// with ErrTaskDeadline when it is read past the deadline (the server expired
// the lease because the attempt's time was up).
func (w *Worker) extendWhileRunning(ctx context.Context, ex *execution, leaseFor time.Duration, deadline time.Time) (stop func()) {
	every := leaseFor / 3
	if every <= 0 {
		return func() {}
	}
	var mu sync.Mutex
	stopped := false
	var timer *time.Timer
	var tick func()
	tick = func() {
		if ctx.Err() != nil || !time.Now().Before(deadline) {
			return
		}
		_, err := w.client.extend(ctx, ex.lease.ID, leaseFor)
		switch {
		case isLeaseLost(err):
			if time.Now().Before(deadline) {
				ex.cancel(ErrLeaseLost)
			} else {
				ex.cancel(ErrTaskDeadline)
			}
			return
		case err != nil && ctx.Err() == nil:
			w.log.Warn("madeira: lease extend failed", "lease_id", ex.lease.ID, "err", err)
		}
		mu.Lock()
		defer mu.Unlock()
		if !stopped {
			timer = time.AfterFunc(every, tick)
		}
	}
	mu.Lock()
	timer = time.AfterFunc(every, tick)
	mu.Unlock()
	return func() {
		mu.Lock()
		stopped = true
		timer.Stop()
		mu.Unlock()
	}
}

// failure maps a handler error to the fail body and retry tier.
func failure(err error) *failRequest {
	var perm *PermanentError
	var trans *TransientError
	var pan *panicError
	switch {
	case errors.As(err, &perm):
		return &failRequest{Error: TaskError{Type: "PermanentError", Message: perm.Err.Error()}, Retry: RetryNever}
	case errors.As(err, &trans):
		return &failRequest{Error: TaskError{Type: "TransientError", Message: trans.Err.Error()}, Retry: RetryFast}
	case errors.As(err, &pan):
		return &failRequest{Error: TaskError{Type: "panic", Message: pan.Error(), Stack: pan.stack}, Retry: RetryAuto}
	}
	return &failRequest{Error: TaskError{Type: errorTypeName(err), Message: err.Error()}, Retry: RetryAuto}
}

// errorTypeName is the Go type of err without the pointer star, e.g.
// "url.Error" or "errors.errorString".
func errorTypeName(err error) string {
	return strings.TrimLeft(fmt.Sprintf("%T", err), "*")
}

func (w *Worker) reportFailure(ex *execution, err error) {
	defer ex.done()
	w.sendFail(ex, failure(err))
}

func (w *Worker) sendFail(ex *execution, req *failRequest) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.client.fail(ctx, ex.lease.ID, req); err != nil {
		w.log.Warn("madeira: fail not recorded", "task_id", ex.lease.Task.TaskID,
			"lease_id", ex.lease.ID, "err", err)
	}
}

// handBackRunning cancels every handler still running (cause
// ErrWorkerClosed) and fails its task with retry "fast".
func (w *Worker) handBackRunning() {
	w.mu.Lock()
	var left []*execution
	for ex := range w.running {
		left = append(left, ex)
	}
	w.mu.Unlock()
	var wg sync.WaitGroup
	for _, ex := range left {
		if !ex.state.CompareAndSwap(execRunning, execAbandoned) {
			continue
		}
		ex.cancel(ErrWorkerClosed)
		wg.Add(1)
		go func(ex *execution) {
			defer wg.Done()
			defer ex.done()
			w.sendFail(ex, &failRequest{Retry: RetryFast, Error: TaskError{
				Type: "WorkerClosed", Message: "worker closed before the task finished"}})
		}(ex)
	}
	wg.Wait()
}
