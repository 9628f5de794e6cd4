// Command madeira-bench measures the Go worker's no-op throughput: it starts a
// throwaway madeira server, preloads N no-op tasks with batched submits, runs
// a worker with 64 slots until every task is acked, and prints
// "drained N tasks in S s = R tasks/s".
//
//	MADEIRA_BIN=/path/to/madeira go run ./cmd/madeira-bench -n 50000
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	madeira "github.com/madeira-dev/madeira/sdk/go"
	"github.com/madeira-dev/madeira/sdk/go/internal/devserver"
)

func main() {
	n := flag.Int("n", 50000, "tasks to preload and drain")
	slots := flag.Int("slots", 64, "worker slots")
	url := flag.String("url", "", "use this running server instead of starting one")
	flag.Parse()

	base := *url
	if base == "" {
		srv, err := devserver.Start()
		if err != nil {
			log.Fatalf("start madeira (%s): %v", devserver.Binary(), err)
		}
		defer srv.Close()
		base = srv.URL
	}
	client, err := madeira.NewClient(base)
	if err != nil {
		log.Fatal(err)
	}
	queue := fmt.Sprintf("bench-%d", time.Now().UnixNano())
	t0 := time.Now()
	if err := preload(client, queue, *n); err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "preloaded %d tasks in %.2f s\n", *n, time.Since(t0).Seconds())

	var done atomic.Int64
	all := make(chan struct{})
	w := madeira.NewWorker(client, madeira.WorkerOptions{
		Queues: []string{queue}, Slots: *slots, PollWait: time.Second,
		Logger: slog.New(slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: slog.LevelWarn})),
	})
	w.Handle("bench.noop", []int{1}, func(ctx context.Context, l *madeira.Lease) (any, error) {
		if done.Add(1) == int64(*n) {
			close(all)
		}
		return nil, nil
	})
	start := time.Now()
	if err := w.Start(); err != nil {
		log.Fatal(err)
	}
	select {
	case <-all:
	case <-time.After(10 * time.Minute):
		log.Fatalf("only %d of %d tasks ran within 10 minutes", done.Load(), *n)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	if err := w.Close(ctx); err != nil { // waits for the last acks
		log.Fatal(err)
	}
	secs := time.Since(start).Seconds()
	fmt.Printf("drained %d tasks in %.2f s = %.0f tasks/s\n", *n, secs, float64(*n)/secs)
}

// preload submits n no-op tasks in batches of 1000, four requests at a time.
func preload(c *madeira.Client, queue string, n int) error {
	const batch = 1000
	var wg sync.WaitGroup
	errs := make(chan error, (n+batch-1)/batch)
	sem := make(chan struct{}, 4)
	for from := 0; from < n; from += batch {
		tasks := make([]madeira.Task, min(batch, n-from))
		for i := range tasks {
			tasks[i] = madeira.Task{TaskType: "bench.noop", Queue: queue, PayloadVersion: 1, Payload: struct{}{}}
		}
		wg.Add(1)
		sem <- struct{}{}
		go func() {
			defer func() { <-sem; wg.Done() }()
			res, err := c.SubmitBatch(context.Background(), tasks)
			if err == nil {
				for _, r := range res {
					if r.Err != nil {
						err = r.Err
						break
					}
				}
			}
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	return <-errs
}
