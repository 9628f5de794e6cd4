package madeira

import (
	"context"
	"time"
)

// maxLeaseBatch is the most tasks one lease request may ask for.
const maxLeaseBatch = 100

// Up to `leasers` lease requests are in flight at once: while one is out,
// another may be sent for the slots freed meanwhile, once at least
// 1/pipelineFactor of the slots are free (so the pipeline never degenerates
// into one-task requests). When idle, only one request long-polls, holding
// every free slot.
const (
	leasers        = 3
	pipelineFactor = 8
)

// acquire takes every free slot (at most maxLeaseBatch), waiting for enough
// to be free; it returns 0 once leasing stops.
func (w *Worker) acquire() int {
	for {
		w.mu.Lock()
		need := 1
		if w.leasing > 0 {
			need = max(1, w.opts.Slots/pipelineFactor)
		}
		if n := min(w.free, maxLeaseBatch); n >= need {
			w.free -= n
			w.leasing++
			w.mu.Unlock()
			return n
		}
		w.mu.Unlock()
		select {
		case <-w.freed:
		case <-w.leaseCtx.Done():
			return 0
		}
	}
}

// release gives n slots back.
func (w *Worker) release(n int) {
	if n <= 0 {
		return
	}
	w.mu.Lock()
	w.free += n
	w.mu.Unlock()
	w.signalFreed()
}

// leaseDone ends one lease request, giving back the slots it did not fill.
func (w *Worker) leaseDone(unused int) {
	w.mu.Lock()
	w.leasing--
	w.free += unused
	w.mu.Unlock()
	w.signalFreed()
}

func (w *Worker) signalFreed() {
	select {
	case w.freed <- struct{}{}:
	default:
	}
}

// leaseLoop long-polls for as many tasks as there are free slots and starts
// one execution per lease, until Close stops leasing.
func (w *Worker) leaseLoop() {
	defer w.leaseLoops.Done()
	req := leaseRequest{
		WorkerID:  w.opts.WorkerID,
		Queues:    w.opts.Queues,
		TaskTypes: w.taskTypes,
		WaitMS:    w.opts.PollWait.Milliseconds(),
		LeaseMS:   w.opts.LeaseDuration.Milliseconds(),
	}
	backoff := time.Duration(0)
	for {
		n := w.acquire()
		if n == 0 {
			return
		}
		req.MaxTasks = n
		ctx, cancel := context.WithTimeout(w.leaseCtx, w.opts.PollWait+30*time.Second)
		asked := time.Now()
		leases, err := w.client.lease(ctx, &req)
		received := time.Now()
		cancel()
		if err != nil {
			leases = nil
		}
		w.leaseDone(n - len(leases))
		for i := range leases {
			w.tasks.Add(1)
			go w.execute(&leases[i], asked, received)
		}
		if err == nil {
			backoff = 0
			continue
		}
		if w.leaseCtx.Err() != nil {
			return
		}
		backoff = min(max(2*backoff, 100*time.Millisecond), 5*time.Second)
		w.log.Warn("madeira: lease request failed", "err", err, "retry_in", backoff)
		select {
		case <-time.After(backoff):
		case <-w.leaseCtx.Done():
			return
		}
	}
}
