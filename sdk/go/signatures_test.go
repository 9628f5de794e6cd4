package madeira

import (
	"errors"
	"net/http"
	"strconv"
	"testing"
	"time"
)

func TestEventSignatureVectors(t *testing.T) {
	var v struct {
		Cases []struct {
			Name      string `json:"name"`
			Secret    string `json:"secret"`
			Timestamp int64  `json:"timestamp"`
			Body      string `json:"body"`
			Signature string `json:"signature"`
		} `json:"cases"`
	}
	readVector(t, "event_signatures.json", &v)
	if len(v.Cases) == 0 {
		t.Fatal("no cases")
	}
	for _, c := range v.Cases {
		h := SignEvent("billing", c.Secret, []byte(c.Body), time.Unix(c.Timestamp, 0))
		if got := h.Get(HeaderSignature); got != c.Signature {
			t.Errorf("%s: signature %s, want %s", c.Name, got, c.Signature)
		}
		if h.Get(HeaderTimestamp) != strconv.FormatInt(c.Timestamp, 10) || h.Get(HeaderSource) != "billing" {
			t.Errorf("%s: headers %v", c.Name, h)
		}
	}
}

func TestWebhookSignatureVectors(t *testing.T) {
	var v struct {
		Tolerance int64 `json:"tolerance_seconds"`
		Cases     []struct {
			Name      string   `json:"name"`
			Secrets   []string `json:"secrets"`
			ID        string   `json:"id"`
			Timestamp int64    `json:"timestamp"`
			Body      string   `json:"body"`
			Now       int64    `json:"now"`
			Signature string   `json:"signature"`
			Valid     bool     `json:"valid"`
			Reason    string   `json:"reason"`
		} `json:"cases"`
	}
	readVector(t, "webhook_signatures.json", &v)
	if time.Duration(v.Tolerance)*time.Second != DefaultWebhookTolerance {
		t.Errorf("tolerance %d s differs from the default", v.Tolerance)
	}
	for _, c := range v.Cases {
		t.Run(c.Name, func(t *testing.T) {
			ver, err := NewWebhookVerifier(c.Secrets...)
			if err != nil {
				t.Fatal(err)
			}
			now := c.Now
			ver.Now = func() time.Time { return time.Unix(now, 0) }
			h := http.Header{}
			h.Set("webhook-id", c.ID)
			h.Set("webhook-timestamp", strconv.FormatInt(c.Timestamp, 10))
			h.Set("webhook-signature", c.Signature)
			err = ver.Verify(h, []byte(c.Body))
			if c.Valid && err != nil {
				t.Fatalf("valid delivery refused: %v", err)
			}
			if !c.Valid {
				if err == nil {
					t.Fatalf("invalid delivery accepted (%s)", c.Reason)
				}
				if c.Reason == "timestamp outside tolerance" && !errors.Is(err, ErrWebhookTimestamp) {
					t.Fatalf("want ErrWebhookTimestamp, got %v", err)
				}
			}
		})
	}
}

func TestWebhookVerifierRotationAndHeaders(t *testing.T) {
	// Either of two secrets verifies (the verifier's own rotation).
	ver, err := NewWebhookVerifier("whsec_bWFkZWlyYS1yb3RhdGlvbi1zZWNyZXQtMg==", "whsec_MfKQ9r8GKYqrTwjUPD8ILPZIo2LaLaSw")
	if err != nil {
		t.Fatal(err)
	}
	ver.Now = func() time.Time { return time.Unix(1614265330, 0) }
	if err := ver.VerifyParts("msg_p5jXN8AQM9LWM0D4loKWxJek", "1614265330",
		"v1,g0hM9SsE+OTPJTGt/tmIKtSyZlE3uFJELVlNIOLJ1OE=", []byte(`{"test": 2432232314}`)); err != nil {
		t.Fatalf("second secret not tried: %v", err)
	}
	if err := ver.Verify(http.Header{}, nil); !errors.Is(err, ErrWebhookHeaders) {
		t.Fatalf("missing headers: %v", err)
	}
	if _, err := NewWebhookVerifier("whsec_***"); err == nil {
		t.Fatal("a malformed secret was accepted")
	}
}
