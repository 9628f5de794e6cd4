package madeira

// statusOfCode maps an error code to the HTTP status the server gives it
// (docs/protocol.md, "Errors"); used for per-item errors of batch answers,
// which carry a code but no status of their own.
func statusOfCode(code string) int {
	switch code {
	case "unauthorized":
		return 401
	case "forbidden":
		return 403
	case "not_found":
		return 404
	case "task_id_conflict", "task_running", "task_terminal", "task_not_dead", "lease_lost":
		return 409
	case "unavailable":
		return 503
	}
	return 400
}
