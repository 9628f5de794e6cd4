package madeira

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"strconv"
	"time"
)

// Headers of a signed event (POST /v1/events).
const (
	HeaderSource    = "X-Madeira-Source"
	HeaderTimestamp = "X-Madeira-Timestamp"
	HeaderSignature = "X-Madeira-Signature"
)

// SignEvent returns the three X-Madeira-* headers for sending body (the raw
// bytes of the request, sent unchanged) to POST /v1/events as the source
// sourceID: the signature is "sha256=" + hex HMAC-SHA256(secret,
// unix-seconds + "\n" + body). The server accepts timestamps within ±300 s.
func SignEvent(sourceID, secret string, body []byte, at time.Time) http.Header {
	ts := strconv.FormatInt(at.Unix(), 10)
	return http.Header{
		HeaderSource:    {sourceID},
		HeaderTimestamp: {ts},
		HeaderSignature: {EventSignature(secret, ts, body)},
	}
}

// EventSignature is the X-Madeira-Signature value for a timestamp (decimal
// unix seconds) and raw body.
func EventSignature(secret, timestamp string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(secret))
	mac.Write([]byte(timestamp))
	mac.Write([]byte{'\n'})
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}
