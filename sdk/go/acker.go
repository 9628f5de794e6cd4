package madeira

import (
	"context"
	"time"
)

// ackers is how many ack batches may be in flight at once. While one batch
// is in flight the next one fills up, so acks coalesce under load.
const ackers = 3

type pendingAck struct {
	ex   *execution
	item ackItem
}

func (w *Worker) ackLoop() {
	defer w.loops.Done()
	batch := make([]pendingAck, 0, maxBatch)
	items := make([]ackItem, 0, maxBatch)
	for {
		select {
		case p := <-w.acks:
			batch = append(batch[:0], p)
		case <-w.stopLoops:
			return
		}
	drain:
		for len(batch) < maxBatch {
			select {
			case p := <-w.acks:
				batch = append(batch, p)
			default:
				break drain
			}
		}
		items = items[:0]
		for _, p := range batch {
			items = append(items, p.item)
		}
		w.sendAcks(batch, items)
	}
}

// sendAcks posts one ack batch, retrying transport failures a few times; a
// lease_lost item means the task's lease expired or was superseded first.
func (w *Worker) sendAcks(batch []pendingAck, items []ackItem) {
	defer func() {
		for _, p := range batch {
			p.ex.done()
		}
	}()
	delay := 100 * time.Millisecond
	for try := 1; ; try++ {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		results, err := w.client.ackBatch(ctx, items)
		cancel()
		if err == nil {
			for _, r := range results {
				if r.Error != nil {
					w.log.Warn("madeira: ack refused", "lease_id", r.LeaseID, "code", r.Error.Code)
				}
			}
			return
		}
		if try == 3 {
			w.log.Error("madeira: ack batch failed; the leases will expire and the tasks retry",
				"leases", len(items), "err", err)
			return
		}
		time.Sleep(delay)
		delay *= 3
	}
}
