package dev.madeira;

import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * The worker's N slot threads. Unlike a plain thread pool, handing over a task wakes a sleeping
 * thread only when no other is already on its way: a burst of quick tasks is run by the few
 * threads that are awake instead of waking all N (each wake-up is a context switch), while
 * tasks that block still get a thread each, one wake-up after another.
 */
final class SlotPool {
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition work = lock.newCondition();
    private final ArrayDeque<Runnable> queue = new ArrayDeque<>();
    private final List<Thread> threads = new ArrayList<>();
    private int waiting; // threads parked in take()
    private int waking;  // threads signalled and not yet back for work
    private boolean shutdown;

    SlotPool(int slots, String name) {
        for (int i = 1; i <= slots; i++) {
            Thread t = new Thread(this::loop, name + "-" + i);
            t.setDaemon(true);
            threads.add(t);
        }
    }

    void start() {
        threads.forEach(Thread::start);
    }

    void execute(Runnable task) {
        lock.lock();
        try {
            if (shutdown) {
                throw new IllegalStateException("slot pool is shut down");
            }
            queue.add(task);
            wakeOneIfNeeded();
        } finally {
            lock.unlock();
        }
    }

    /** No new tasks; threads finish what is queued, then end. */
    void shutdown() {
        lock.lock();
        try {
            shutdown = true;
            work.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Shuts down and interrupts every thread. */
    void shutdownNow() {
        shutdown();
        threads.forEach(Thread::interrupt);
    }

    boolean awaitTermination(long timeout, TimeUnit unit) throws InterruptedException {
        long until = System.nanoTime() + unit.toNanos(timeout);
        for (Thread t : threads) {
            long left = until - System.nanoTime();
            if (left > 0) {
                TimeUnit.NANOSECONDS.timedJoin(t, left);
            }
            if (t.isAlive()) {
                return false;
            }
        }
        return true;
    }

    private void wakeOneIfNeeded() {
        if (!queue.isEmpty() && waking == 0 && waiting > 0) {
            waking++;
            work.signal();
        }
    }

    private void loop() {
        Runnable task;
        while ((task = take()) != null) {
            task.run();
        }
    }

    private Runnable take() {
        lock.lock();
        try {
            while (queue.isEmpty()) {
                if (shutdown) {
                    return null;
                }
                waiting++;
                try {
                    work.await();
                } catch (InterruptedException e) {
                    // only shutdownNow interrupts an idle slot; the loop re-checks shutdown
                } finally {
                    waiting--;
                    if (waking > 0) {
                        waking--;
                    }
                }
            }
            Runnable task = queue.poll();
            wakeOneIfNeeded();
            return task;
        } finally {
            lock.unlock();
        }
    }
}
