package madeira

import (
	"context"
	"os/signal"
	"syscall"
	"time"
)

// RunUntilSignal starts the worker and runs it until SIGTERM or SIGINT, then
// closes it gracefully: in-flight tasks get grace to finish, the rest are
// handed back with retry "fast".
func (w *Worker) RunUntilSignal(grace time.Duration) error {
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGTERM, syscall.SIGINT)
	defer stop()
	return w.Run(ctx, grace)
}
