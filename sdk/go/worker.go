package madeira

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"time"
)

// HandlerFunc runs one task. ctx is cancelled when the task's deadline
// (timeout_ms after the attempt began) passes, when the lease is lost, or when
// Close's grace period runs out; context.Cause(ctx) is then ErrTaskDeadline,
// ErrLeaseLost or ErrWorkerClosed. A nil error acks the task with result
// (encoded as JSON; nil means no result). Return Permanent(err) to fail
// without retry, Transient(err) for a fast retry; any other error is retried
// by the server's back-off policy ("auto").
type HandlerFunc func(ctx context.Context, lease *Lease) (result any, err error)

// WorkerOptions configure a Worker. Only Queues is required.
type WorkerOptions struct {
	// Queues to lease from.
	Queues []string
	// Slots is the number of tasks run at once (default 10).
	Slots int
	// WorkerID names this worker in attempts and metrics (default
	// hostname-pid-random).
	WorkerID string
	// LeaseDuration is the lease_ms asked for; zero means the task's
	// timeout_ms. The lease is extended every LeaseDuration/3 while the
	// handler runs, never past the task's deadline.
	LeaseDuration time.Duration
	// PollWait is how long one lease request long-polls (default 5 s, ≤ 30 s).
	PollWait time.Duration
	// HeartbeatInterval (default 5 s, at most 10 s).
	HeartbeatInterval time.Duration
	// Logger for failures the worker handles itself (default slog.Default()).
	Logger *slog.Logger
}

// Worker leases tasks from a Madeira server and runs the registered handlers.
// Register handlers with Handle, then Start (or Run / RunUntilSignal), and
// finish with Close.
type Worker struct {
	client    *Client
	opts      WorkerOptions
	log       *slog.Logger
	handlers  map[string]HandlerFunc
	taskTypes map[string][]int

	mu      sync.Mutex
	free    int
	leasing int           // lease requests in flight
	freed   chan struct{} // a token when slots were released
	running map[*execution]struct{}
	state   int // 0 new, 1 started, 2 closing

	leaseCtx    context.Context // cancelled when Close stops leasing
	stopLeasing context.CancelFunc
	leaseLoops  sync.WaitGroup
	hardCtx     context.Context // parent of every handler context
	hardCancel  context.CancelCauseFunc
	tasks       sync.WaitGroup // executions until reported
	loops       sync.WaitGroup // heartbeat and ackers
	acks        chan pendingAck
	stopLoops   chan struct{}
	closed      chan struct{}
}

// NewWorker returns a worker that uses client for every request.
func NewWorker(client *Client, opts WorkerOptions) *Worker {
	if opts.Slots <= 0 {
		opts.Slots = 10
	}
	if opts.PollWait <= 0 {
		opts.PollWait = 5 * time.Second
	}
	if opts.PollWait > 30*time.Second {
		opts.PollWait = 30 * time.Second
	}
	if opts.HeartbeatInterval <= 0 || opts.HeartbeatInterval > 10*time.Second {
		opts.HeartbeatInterval = 5 * time.Second
	}
	if opts.WorkerID == "" {
		opts.WorkerID = defaultWorkerID()
	}
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	return &Worker{
		client:    client,
		opts:      opts,
		log:       log.With("worker_id", opts.WorkerID),
		handlers:  map[string]HandlerFunc{},
		taskTypes: map[string][]int{},
		free:      opts.Slots,
		freed:     make(chan struct{}, 1),
		running:   map[*execution]struct{}{},
		acks:      make(chan pendingAck, opts.Slots),
		stopLoops: make(chan struct{}),
		closed:    make(chan struct{}),
	}
}

// ID is the worker_id this worker reports.
func (w *Worker) ID() string { return w.opts.WorkerID }

// Handle registers h for taskType and the payload versions it understands;
// the server routes only those versions to this worker. It panics on an
// invalid task type or version, a second registration, or after Start.
func (w *Worker) Handle(taskType string, versions []int, h HandlerFunc) {
	w.mu.Lock()
	defer w.mu.Unlock()
	switch {
	case w.state != 0:
		panic("madeira: Handle called after Start")
	case !validName(taskType):
		panic(fmt.Sprintf("madeira: invalid task type %q", taskType))
	case len(versions) == 0:
		panic("madeira: Handle needs at least one payload version")
	case h == nil:
		panic("madeira: nil handler")
	case w.handlers[taskType] != nil:
		panic(fmt.Sprintf("madeira: a handler for %q is already registered", taskType))
	}
	for _, v := range versions {
		if v < 1 {
			panic(fmt.Sprintf("madeira: invalid payload version %d", v))
		}
	}
	w.handlers[taskType] = h
	w.taskTypes[taskType] = append([]int(nil), versions...)
}

// Start begins heartbeats and leasing in the background.
func (w *Worker) Start() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.state != 0 {
		return errors.New("madeira: worker already started")
	}
	if len(w.opts.Queues) == 0 {
		return errors.New("madeira: WorkerOptions.Queues is empty")
	}
	for _, q := range w.opts.Queues {
		if !validName(q) {
			return fmt.Errorf("madeira: invalid queue %q", q)
		}
	}
	if len(w.handlers) == 0 {
		return errors.New("madeira: no handlers registered")
	}
	w.state = 1
	w.leaseCtx, w.stopLeasing = context.WithCancel(context.Background())
	w.hardCtx, w.hardCancel = context.WithCancelCause(context.Background())
	w.loops.Add(1 + ackers)
	go w.heartbeatLoop()
	for i := 0; i < ackers; i++ {
		go w.ackLoop()
	}
	w.leaseLoops.Add(leasers)
	for i := 0; i < leasers; i++ {
		go w.leaseLoop()
	}
	return nil
}

// Close stops leasing, waits for in-flight tasks to finish until ctx is done
// (the grace period), then cancels the handlers still running (cause
// ErrWorkerClosed) and hands their tasks back with retry "fast". It returns
// ctx.Err() when some tasks had to be handed back. A handler that ignores
// its context keeps running in the background, but its result is not acked.
func (w *Worker) Close(ctx context.Context) error {
	w.mu.Lock()
	switch w.state {
	case 0:
		w.state = 2
		w.mu.Unlock()
		close(w.closed)
		return nil
	case 2:
		w.mu.Unlock()
		select {
		case <-w.closed:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	w.state = 2
	w.mu.Unlock()

	w.stopLeasing()
	w.leaseLoops.Wait()
	done := make(chan struct{})
	go func() { w.tasks.Wait(); close(done) }()
	var err error
	select {
	case <-done:
	case <-ctx.Done():
		err = ctx.Err()
		w.handBackRunning()
		<-done
	}
	w.hardCancel(ErrWorkerClosed)
	close(w.stopLoops)
	w.loops.Wait()
	close(w.closed)
	return err
}

// Run starts the worker, blocks until ctx is done, then closes it with the
// given grace period.
func (w *Worker) Run(ctx context.Context, grace time.Duration) error {
	if err := w.Start(); err != nil {
		return err
	}
	<-ctx.Done()
	closeCtx, cancel := context.WithTimeout(context.Background(), grace)
	defer cancel()
	return w.Close(closeCtx)
}

func (w *Worker) heartbeatLoop() {
	defer w.loops.Done()
	t := time.NewTicker(w.opts.HeartbeatInterval)
	defer t.Stop()
	hb := &heartbeat{WorkerID: w.opts.WorkerID, Language: "go", SDKVersion: Version, Queues: w.opts.Queues}
	for {
		ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
		if err := w.client.heartbeat(ctx, hb); err != nil {
			w.log.Warn("madeira: heartbeat failed", "err", err)
		}
		cancel()
		select {
		case <-t.C:
		case <-w.stopLoops:
			return
		}
	}
}

func defaultWorkerID() string {
	host, err := os.Hostname()
	if err != nil || host == "" {
		host = "go"
	}
	var b [4]byte
	_, _ = rand.Read(b[:])
	return fmt.Sprintf("%s-%d-%s", host, os.Getpid(), hex.EncodeToString(b[:]))
}
