// asynq-bench runs Madeira's peer scenarios against Asynq (github.com/hibiken/asynq) and prints
// one JSON line per result. Usage:
//
//	asynq-bench -redis redis://127.0.0.1:6379/0 -scenario enqueue|tune|drain|latency|delayed
//
// Every scenario uses queue "bench", task type "bench.noop", the ≈300-byte payload of
// bench/workload.cc and Asynq's defaults for everything that is not named in the output.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/hibiken/asynq"
)

const (
	queue    = "bench"
	taskType = "bench.noop"
)

// payload is the same ≈300-byte JSON document bench/workload.cc sends in every Madeira task.
var payload = func() []byte {
	p := `{"order_id":202509110001,"store_id":"S10086","customer":"c-000042",` +
		`"items":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}],"note":"`
	return []byte(p + strings.Repeat("x", 298-len(p)) + `"}`)
}()

type config struct {
	redis       asynq.RedisClientOpt
	n           int
	inflight    int
	concurrency int
	candidates  []int
	rate        float64
	seconds     float64
	delay       time.Duration
}

// result is one line of output; Value is null where the peer has no such operation.
type result struct {
	Peer     string         `json:"peer"`
	ID       string         `json:"id"`
	What     string         `json:"what"`
	Unit     string         `json:"unit"`
	Value    *float64       `json:"value"`
	Settings map[string]any `json:"settings,omitempty"`
	Note     string         `json:"note,omitempty"`
}

func emit(r result) {
	r.Peer = "asynq"
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		log.Fatal(err)
	}
}

func value(v float64) *float64 { return &v }

func main() {
	redisURL := flag.String("redis", "redis://127.0.0.1:6379/0", "Redis URL")
	scenario := flag.String("scenario", "", "enqueue | tune | drain | latency | delayed | version")
	n := flag.Int("n", 0, "task count (0: the scenario's default: enqueue 100000, drain 200000, "+
		"tune 20000 per setting, delayed 10000)")
	inflight := flag.Int("inflight", 64, "enqueue calls in flight")
	concurrency := flag.Int("concurrency", 0, "worker Concurrency (0: Asynq's default, the CPU count)")
	candidates := flag.String("candidates", "8,32,128,512", "Concurrency settings tune tries")
	rate := flag.Float64("rate", 2000, "latency: tasks per second, open loop")
	seconds := flag.Float64("seconds", 10, "latency: how long to submit")
	delay := flag.Duration("delay", 2*time.Second, "delayed: how far ahead tasks are scheduled")
	flag.Parse()
	log.SetFlags(0)
	log.SetPrefix("asynq-bench: ")

	if *scenario == "version" {
		fmt.Println(asynqVersion())
		return
	}
	opt, err := asynq.ParseRedisURI(*redisURL)
	if err != nil {
		log.Fatal(err)
	}
	clientOpt, ok := opt.(asynq.RedisClientOpt)
	if !ok {
		log.Fatalf("%s: only redis:// URLs are supported", *redisURL)
	}
	cfg := config{redis: clientOpt, n: *n, inflight: *inflight, concurrency: *concurrency,
		rate: *rate, seconds: *seconds, delay: *delay}
	for _, c := range strings.Split(*candidates, ",") {
		v, err := strconv.Atoi(strings.TrimSpace(c))
		if err != nil || v < 1 {
			log.Fatalf("bad -candidates %q", *candidates)
		}
		cfg.candidates = append(cfg.candidates, v)
	}

	switch *scenario {
	case "enqueue":
		err = runEnqueue(cfg)
	case "tune":
		err = runTune(cfg)
	case "drain":
		err = runDrain(cfg)
	case "latency":
		err = runLatency(cfg)
	case "delayed":
		err = runDelayed(cfg)
	default:
		flag.Usage()
		os.Exit(2)
	}
	if err != nil {
		log.Fatal(err)
	}
}

func orDefault(v, def int) int {
	if v > 0 {
		return v
	}
	return def
}

func asynqVersion() string {
	if info, ok := debug.ReadBuildInfo(); ok {
		for _, dep := range info.Deps {
			if dep.Path == "github.com/hibiken/asynq" {
				return dep.Version
			}
		}
	}
	return "unknown"
}

// newClient opens a client whose pool holds one connection per call in flight, so that
// "64 in flight" reaches Redis as 64 concurrent commands instead of queueing for a connection.
func newClient(cfg config, inflight int) *asynq.Client {
	opt := cfg.redis
	opt.PoolSize = inflight
	return asynq.NewClient(opt)
}

// enqueueAll calls Enqueue for tasks 0..n-1 from `inflight` goroutines; opts(i) gives the
// options of task i and done(i), when set, runs right after task i was accepted.
func enqueueAll(ctx context.Context, client *asynq.Client, n, inflight int,
	opts func(i int) []asynq.Option, done func(i int)) error {
	var next atomic.Int64
	var wg sync.WaitGroup
	errs := make(chan error, inflight)
	for range inflight {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				var o []asynq.Option
				if opts != nil {
					o = opts(i)
				}
				if _, err := client.EnqueueContext(ctx, asynq.NewTask(taskType, payload), o...); err != nil {
					errs <- fmt.Errorf("enqueue task %d: %w", i, err)
					next.Store(int64(n))
					return
				}
				if done != nil {
					done(i)
				}
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}

var toBench = []asynq.Option{asynq.Queue(queue)}

// (a) n single Enqueue calls, `inflight` at a time. Asynq has no batch enqueue.
func runEnqueue(cfg config) error {
	n := orDefault(cfg.n, 100_000)
	client := newClient(cfg, cfg.inflight)
	defer client.Close()
	start := time.Now()
	err := enqueueAll(context.Background(), client, n, cfg.inflight,
		func(int) []asynq.Option { return toBench }, nil)
	if err != nil {
		return err
	}
	elapsed := time.Since(start).Seconds()
	emit(result{ID: "a.single", What: "enqueue: 1 task per call", Unit: "tasks/s",
		Value:    value(float64(n) / elapsed),
		Settings: map[string]any{"tasks": n, "in_flight": cfg.inflight, "pool_size": cfg.inflight}})
	emit(result{ID: "a.bulk", What: "enqueue: bulk", Unit: "tasks/s", Value: nil,
		Note: "Asynq has no bulk or pipelined enqueue: Client offers Enqueue/EnqueueContext only, " +
			"one Lua script call per task"})
	return nil
}

// preload enqueues n tasks with 128 calls in flight (not timed).
func preload(cfg config, n int) error {
	client := newClient(cfg, 128)
	defer client.Close()
	return enqueueAll(context.Background(), client, n, 128,
		func(int) []asynq.Option { return toBench }, nil)
}

type server struct {
	srv       *asynq.Server
	inspector *asynq.Inspector
}

func startServer(cfg config, concurrency int, handler asynq.HandlerFunc) (*server, error) {
	srv := asynq.NewServer(cfg.redis, asynq.Config{
		Concurrency: concurrency,
		Queues:      map[string]int{queue: 1},
		LogLevel:    asynq.ErrorLevel,
	})
	mux := asynq.NewServeMux()
	mux.Handle(taskType, handler)
	if err := srv.Start(mux); err != nil {
		return nil, err
	}
	return &server{srv: srv, inspector: asynq.NewInspector(cfg.redis)}, nil
}

func (s *server) stop() {
	s.srv.Shutdown()
	s.inspector.Close()
}

// waitIdle polls until the bench queue has nothing pending or active (handlers return before
// Asynq marks their task done, so the last handler call is not yet the end of the drain).
func (s *server) waitIdle(timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		info, err := s.inspector.GetQueueInfo(queue)
		if err != nil {
			return err
		}
		if info.Pending == 0 && info.Active == 0 {
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("queue not idle after %v: %d pending, %d active", timeout,
				info.Pending, info.Active)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// drainOnce preloads n tasks, then times one server with `concurrency` workers until all n are
// done.
func drainOnce(cfg config, n, concurrency int) (float64, error) {
	if err := preload(cfg, n); err != nil {
		return 0, err
	}
	var handled atomic.Int64
	all := make(chan struct{})
	start := time.Now()
	s, err := startServer(cfg, concurrency, func(context.Context, *asynq.Task) error {
		if handled.Add(1) == int64(n) {
			close(all)
		}
		return nil
	})
	if err != nil {
		return 0, err
	}
	defer s.stop()
	select {
	case <-all:
	case <-time.After(5 * time.Minute):
		return 0, fmt.Errorf("drain: %d of %d handled in 5 minutes", handled.Load(), n)
	}
	if err := s.waitIdle(30 * time.Second); err != nil {
		return 0, err
	}
	return float64(n) / time.Since(start).Seconds(), nil
}

// (b, once) tries each candidate Concurrency on a smaller drain and names the fastest.
func runTune(cfg config) error {
	n := orDefault(cfg.n, 20_000)
	best, bestRate := 0, 0.0
	for _, c := range cfg.candidates {
		rate, err := drainOnce(cfg, n, c)
		if err != nil {
			return err
		}
		emit(result{ID: "b.tune", What: fmt.Sprintf("drain %d tasks, Concurrency %d", n, c),
			Unit: "tasks/s", Value: value(rate), Settings: map[string]any{"concurrency": c, "tasks": n}})
		if rate > bestRate {
			best, bestRate = c, rate
		}
	}
	emit(result{ID: "b.best", What: "best Concurrency of the tried settings", Unit: "workers",
		Value: value(float64(best)), Settings: map[string]any{"tried": cfg.candidates, "tasks": n}})
	return nil
}

// (b) drain n preloaded tasks with one server process.
func runDrain(cfg config) error {
	n := orDefault(cfg.n, 200_000)
	rate, err := drainOnce(cfg, n, cfg.concurrency)
	if err != nil {
		return err
	}
	emit(result{ID: "b.drain", What: "drain preloaded no-op tasks, one worker process", Unit: "tasks/s",
		Value: value(rate), Settings: map[string]any{"tasks": n, "concurrency": cfg.concurrency}})
	return nil
}

// percentile is bench/stats.cc's nearest-rank percentile.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	rank := int(float64(len(sorted))*p/100 + 0.999999999)
	return sorted[min(max(rank, 1), len(sorted))-1]
}

func seqOf(ctx context.Context, prefix string) (int, error) {
	id, ok := asynq.GetTaskID(ctx)
	if !ok || !strings.HasPrefix(id, prefix) {
		return 0, fmt.Errorf("unexpected task id %q", id)
	}
	return strconv.Atoi(id[len(prefix):])
}

// (c) open-loop enqueue at cfg.rate for cfg.seconds from 16 goroutines (as make bench does);
// latency = handler start - the moment that task's Enqueue returned, floored at zero.
func runLatency(cfg config) error {
	const senders = 16
	total := int(cfg.rate * cfg.seconds)
	base := time.Now()
	acked := make([]atomic.Int64, total)   // ns since base; 0 = not yet
	started := make([]atomic.Int64, total) // ns since base; 0 = not yet
	var received atomic.Int64
	all := make(chan struct{})
	s, err := startServer(cfg, cfg.concurrency, func(ctx context.Context, _ *asynq.Task) error {
		now := int64(time.Since(base))
		i, err := seqOf(ctx, "c-")
		if err != nil || i >= total {
			return asynq.SkipRetry
		}
		if started[i].CompareAndSwap(0, now) && received.Add(1) == int64(total) {
			close(all)
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer s.stop()
	client := newClient(cfg, senders)
	defer client.Close()

	t0 := time.Now().Add(300 * time.Millisecond)
	due := func(i int) time.Time {
		return t0.Add(time.Duration(float64(i) / cfg.rate * float64(time.Second)))
	}
	var wg sync.WaitGroup
	errs := make(chan error, senders)
	for w := range senders {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := w; i < total; i += senders {
				time.Sleep(time.Until(due(i)))
				_, err := client.Enqueue(asynq.NewTask(taskType, payload), asynq.Queue(queue),
					asynq.TaskID("c-"+strconv.Itoa(i)))
				if err != nil {
					errs <- err
					return
				}
				acked[i].Store(int64(time.Since(base)))
			}
		}()
	}
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	lastAck := time.Now()
	select {
	case <-all:
	case <-time.After(30 * time.Second):
		return fmt.Errorf("latency: %d of %d tasks handled 30 s after the last enqueue",
			received.Load(), total)
	}
	lat := make([]float64, total)
	for i := range total {
		lat[i] = max(0, float64(started[i].Load()-acked[i].Load())/1e6)
	}
	slices.Sort(lat)
	settings := map[string]any{"rate": cfg.rate, "seconds": cfg.seconds, "senders": senders,
		"concurrency": cfg.concurrency, "task_check_interval": "default (1s)"}
	what := fmt.Sprintf("enqueue acked -> handler start @%.0f/s", cfg.rate)
	emit(result{ID: "c.p50", What: what + " p50", Unit: "ms", Value: value(percentile(lat, 50)), Settings: settings})
	emit(result{ID: "c.p99", What: what + " p99", Unit: "ms", Value: value(percentile(lat, 99)), Settings: settings})
	emit(result{ID: "c.max", What: what + " max", Unit: "ms", Value: value(percentile(lat, 100)), Settings: settings})
	emit(result{ID: "c.rate", What: "enqueue rate reached (open loop)", Unit: "tasks/s",
		Value: value(float64(total) / lastAck.Sub(t0).Seconds()), Settings: settings})
	return nil
}

// (d) n tasks in 10 rounds 100 ms apart, each due cfg.delay after its round starts;
// lateness = handler start (wall clock) - due time. Asynq keeps due times in whole seconds and
// moves due tasks every DelayedTaskCheckInterval (default 5 s).
func runDelayed(cfg config) error {
	const rounds = 10
	n := orDefault(cfg.n, 10_000)
	dueMs := make([]int64, n)
	startMs := make([]atomic.Int64, n)
	var received atomic.Int64
	all := make(chan struct{})
	s, err := startServer(cfg, cfg.concurrency, func(ctx context.Context, _ *asynq.Task) error {
		now := time.Now().UnixMilli()
		i, err := seqOf(ctx, "d-")
		if err != nil || i >= n {
			return asynq.SkipRetry
		}
		if startMs[i].CompareAndSwap(0, now) && received.Add(1) == int64(n) {
			close(all)
		}
		return nil
	})
	if err != nil {
		return err
	}
	defer s.stop()
	client := newClient(cfg, cfg.inflight)
	defer client.Close()
	perRound := (n + rounds - 1) / rounds
	for first := 0; first < n; first += perRound {
		roundStart := time.Now()
		at := roundStart.Add(cfg.delay)
		count := min(perRound, n-first)
		for i := range count {
			dueMs[first+i] = at.UnixMilli()
		}
		err := enqueueAll(context.Background(), client, count, cfg.inflight, func(i int) []asynq.Option {
			return []asynq.Option{asynq.Queue(queue), asynq.ProcessAt(at), asynq.TaskID("d-" + strconv.Itoa(first+i))}
		}, nil)
		if err != nil {
			return err
		}
		time.Sleep(time.Until(roundStart.Add(100 * time.Millisecond)))
	}
	select {
	case <-all:
	case <-time.After(cfg.delay + 30*time.Second):
		return errors.New("delayed: " + strconv.FormatInt(received.Load(), 10) + " of " +
			strconv.Itoa(n) + " handled in time")
	}
	late := make([]float64, n)
	early := 0
	for i := range n {
		late[i] = float64(startMs[i].Load() - dueMs[i])
		if late[i] < 0 {
			early++
		}
	}
	slices.Sort(late)
	settings := map[string]any{"tasks": n, "rounds": rounds, "delay_ms": cfg.delay.Milliseconds(),
		"concurrency": cfg.concurrency, "delayed_task_check_interval": "default (5s)"}
	note := ""
	if early > 0 {
		note = fmt.Sprintf("%d tasks started before their due time (min %.0f ms): Asynq stores due "+
			"times in whole seconds", early, late[0])
	}
	emit(result{ID: "d.p50", What: "delayed lateness p50", Unit: "ms", Value: value(percentile(late, 50)), Settings: settings, Note: note})
	emit(result{ID: "d.p99", What: "delayed lateness p99", Unit: "ms", Value: value(percentile(late, 99)), Settings: settings, Note: note})
	emit(result{ID: "d.max", What: "delayed lateness max", Unit: "ms", Value: value(percentile(late, 100)), Settings: settings, Note: note})
	return nil
}
