package dev.madeira;

/**
 * One item of a batch submit, judged alone by the server: either {@link #result()} or
 * {@link #error()} is set. A batch is never refused as a whole for one bad item.
 */
public final class BatchItem {
    private final SubmitResult result;
    private final MadeiraException error;

    BatchItem(SubmitResult result, MadeiraException error) {
        this.result = result;
        this.error = error;
    }

    public boolean ok() {
        return error == null;
    }

    public SubmitResult result() {
        return result;
    }

    /** An {@link ApiError} (status 0: reported inside a 200) or a local {@link ValidationError}. */
    public MadeiraException error() {
        return error;
    }

    /** The result, or the item's error thrown. */
    public SubmitResult orThrow() {
        if (error != null) {
            throw error;
        }
        return result;
    }

    @Override
    public String toString() {
        return ok() ? result.toString() : "BatchItem{" + error.getMessage() + "}";
    }
}
