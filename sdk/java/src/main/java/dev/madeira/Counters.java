package dev.madeira;

import java.util.concurrent.atomic.AtomicLong;

/** The live counters behind {@link WorkerStats}. */
final class Counters {
    final AtomicLong leaseRequests = new AtomicLong();
    final AtomicLong leased = new AtomicLong();
    final AtomicLong ackRequests = new AtomicLong();
    final AtomicLong acked = new AtomicLong();
    final AtomicLong failed = new AtomicLong();
    final AtomicLong expired = new AtomicLong();

    WorkerStats snapshot() {
        return new WorkerStats(leaseRequests.get(), leased.get(), ackRequests.get(), acked.get(), failed.get(),
                expired.get());
    }
}
