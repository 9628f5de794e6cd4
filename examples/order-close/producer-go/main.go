// The order service: every order placed gets an "order.close_timeout" task that
// fires when the payment window ends (15 minutes in production, seconds in the
// demo). If the order is still unpaid by then, a worker closes it.
//
// To show what idempotency_key guarantees, every order is submitted twice —
// two different tasks (server-made task_ids) with the same business key
// "order.close:<id>". That is what happens in production when a producer times
// out and retries a submit that in fact went through, or when two services
// react to the same "order placed" event.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"time"

	madeira "github.com/madeira-dev/madeira/sdk/go"
)

func main() {
	server := flag.String("server", envOr("MADEIRA_URL", "http://127.0.0.1:8080"), "Madeira base URL")
	orders := flag.Int("orders", 60, "number of orders to place")
	firstID := flag.Int64("first-id", 1001, "id of the first order")
	delay := flag.Duration("delay", 3*time.Second, "payment window before the close fires (production: 15m)")
	withKey := flag.Bool("idempotency-key", true, "set idempotency_key (false shows the incident: orders closed twice)")
	flag.Parse()

	client, err := madeira.NewClient(*server, madeira.WithToken(os.Getenv("MADEIRA_TOKEN")))
	if err != nil {
		log.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()

	task := func(orderID int64) madeira.Task {
		t := madeira.Task{
			TaskType:       "order.close_timeout",
			Queue:          "orders",
			PayloadVersion: 1,
			Payload:        map[string]any{"order_id": orderID},
			ScheduleTime:   time.Now().Add(*delay),
		}
		if *withKey {
			// the business key: whichever task of this order runs first closes it;
			// its siblings complete as "succeeded, deduplicated" without running
			t.IdempotencyKey = fmt.Sprintf("order.close:%d", orderID)
		}
		return t
	}

	// Pass 1: the checkout service, one task per order.
	// Pass 2: the same orders again — a retried submit / a second service
	// reacting to the same event. New task_ids, same idempotency keys.
	accepted := 0
	for _, pass := range []string{"checkout", "retry"} {
		batch := make([]madeira.Task, 0, *orders)
		for i := 0; i < *orders; i++ {
			batch = append(batch, task(*firstID+int64(i)))
		}
		results, err := client.SubmitBatch(ctx, batch)
		if err != nil {
			log.Fatalf("submit (%s pass): %v", pass, err)
		}
		for i, r := range results {
			if r.Err != nil {
				log.Fatalf("submit (%s pass) order %d: %v", pass, *firstID+int64(i), r.Err)
			}
			accepted++
		}
	}
	key := "same idempotency_key"
	if !*withKey {
		key = "NO idempotency_key"
	}
	fmt.Printf("producer-go: placed %d orders, submitted %d order.close_timeout tasks "+
		"(each order twice, %s), due in %s\n", *orders, accepted, key, delay)
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
