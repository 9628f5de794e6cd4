package madeira

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Errors of WebhookVerifier.Verify.
var (
	ErrWebhookHeaders   = errors.New("madeira: webhook-id, webhook-timestamp or webhook-signature missing or malformed")
	ErrWebhookTimestamp = errors.New("madeira: webhook timestamp outside tolerance")
	ErrWebhookSignature = errors.New("madeira: no webhook signature matches")
)

// DefaultWebhookTolerance is how far a delivery's timestamp may be from now.
const DefaultWebhookTolerance = 300 * time.Second

// WebhookVerifier checks Standard Webhooks deliveries from Madeira. It
// accepts a delivery when any "v1," signature in webhook-signature matches
// any of its secrets (constant-time compare) and the timestamp is within
// Tolerance of Now.
type WebhookVerifier struct {
	keys      [][]byte
	Tolerance time.Duration
	// Now is the clock (default time.Now); tests may replace it.
	Now func() time.Time
}

// NewWebhookVerifier takes the endpoint's secrets ("whsec_" + base64), several
// while rotating.
func NewWebhookVerifier(secrets ...string) (*WebhookVerifier, error) {
	if len(secrets) == 0 {
		return nil, errors.New("madeira: at least one webhook secret is needed")
	}
	v := &WebhookVerifier{Tolerance: DefaultWebhookTolerance, Now: time.Now}
	for _, s := range secrets {
		key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(s, "whsec_"))
		if err != nil || len(key) == 0 {
			return nil, fmt.Errorf("madeira: webhook secret is not whsec_ + base64")
		}
		v.keys = append(v.keys, key)
	}
	return v, nil
}

// Verify checks a delivery from its headers and raw body.
func (v *WebhookVerifier) Verify(h http.Header, body []byte) error {
	return v.VerifyParts(h.Get("webhook-id"), h.Get("webhook-timestamp"), h.Get("webhook-signature"), body)
}

// VerifyParts checks a delivery from the three header values and raw body.
func (v *WebhookVerifier) VerifyParts(id, timestamp, signature string, body []byte) error {
	if id == "" || timestamp == "" || signature == "" {
		return ErrWebhookHeaders
	}
	ts, err := strconv.ParseInt(timestamp, 10, 64)
	if err != nil {
		return ErrWebhookHeaders
	}
	now := time.Now
	if v.Now != nil {
		now = v.Now
	}
	tol := v.Tolerance
	if tol <= 0 {
		tol = DefaultWebhookTolerance
	}
	if skew := now().Unix() - ts; skew > int64(tol/time.Second) || -skew > int64(tol/time.Second) {
		return ErrWebhookTimestamp
	}
	signed := make([]byte, 0, len(id)+len(timestamp)+len(body)+2)
	signed = append(append(append(append(append(signed, id...), '.'), timestamp...), '.'), body...)
	var expected [][]byte
	for _, key := range v.keys {
		mac := hmac.New(sha256.New, key)
		mac.Write(signed)
		expected = append(expected, mac.Sum(nil))
	}
	for _, part := range strings.Fields(signature) {
		version, sig, ok := strings.Cut(part, ",")
		if !ok || version != "v1" {
			continue
		}
		got, err := base64.StdEncoding.DecodeString(sig)
		if err != nil {
			continue
		}
		for _, want := range expected {
			if hmac.Equal(got, want) {
				return nil
			}
		}
	}
	return ErrWebhookSignature
}
