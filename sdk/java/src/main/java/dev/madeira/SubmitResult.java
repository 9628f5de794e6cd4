package dev.madeira;

import com.fasterxml.jackson.databind.JsonNode;

/** The answer to a submit: the task's id, its status, and whether it repeated an earlier submit. */
public final class SubmitResult {
    private final String taskId;
    private final String status;
    private final boolean duplicate;

    public SubmitResult(String taskId, String status, boolean duplicate) {
        this.taskId = taskId;
        this.status = status;
        this.duplicate = duplicate;
    }

    static SubmitResult from(JsonNode json) {
        return new SubmitResult(Json.text(json, "task_id"), Json.text(json, "status"),
                json.path("duplicate").asBoolean(false));
    }

    public String taskId() {
        return taskId;
    }

    public String status() {
        return status;
    }

    public boolean duplicate() {
        return duplicate;
    }

    @Override
    public String toString() {
        return "SubmitResult{" + taskId + " " + status + (duplicate ? " duplicate" : "") + "}";
    }
}
