package dev.madeira;

/**
 * Runs one task. Return the result to ack with (any value Jackson can serialise, or
 * {@code null} for none). Throw {@link PermanentError} to fail without retry,
 * {@link TransientError} for a fast retry, anything else for the task type's back-off.
 * The thread is interrupted when the task's deadline passes: a handler that blocks should let
 * {@link InterruptedException} propagate, and a long computation should check
 * {@link TaskContext#isCancelled()}.
 */
@FunctionalInterface
public interface Handler {
    Object handle(Task task, TaskContext context) throws Exception;
}
