package madeira

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/url"
	"strconv"
	"strings"
	"time"
)

// Client talks to one Madeira server. It is safe for concurrent use and
// reuses keep-alive connections; one Client is shared by producers and
// workers of a process.
type Client struct {
	base   string
	token  string
	http   *http.Client
	limits Limits
}

// Option configures a Client.
type Option func(*Client)

// WithToken sends "Authorization: Bearer TOKEN" on every /v1 request.
func WithToken(token string) Option { return func(c *Client) { c.token = token } }

// WithHTTPClient replaces the default HTTP client (whose Transport keeps up
// to 256 idle connections to the server alive).
func WithHTTPClient(h *http.Client) Option { return func(c *Client) { c.http = h } }

// WithLimits sets the payload limits checked before sending; use it when the
// server's [limits] differ from the defaults.
func WithLimits(l Limits) Option { return func(c *Client) { c.limits = l } }

// NewClient returns a client for the server at baseURL, e.g.
// "http://127.0.0.1:8080".
func NewClient(baseURL string, opts ...Option) (*Client, error) {
	u, err := url.Parse(baseURL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("madeira: base URL must be http(s)://host[:port], got %q", baseURL)
	}
	c := &Client{
		base:   strings.TrimRight(baseURL, "/"),
		http:   &http.Client{Transport: newTransport(256)},
		limits: DefaultLimits,
	}
	for _, o := range opts {
		o(c)
	}
	return c, nil
}

// newTransport is tuned for many concurrent requests to one host.
func newTransport(conns int) *http.Transport {
	return &http.Transport{
		Proxy:               http.ProxyFromEnvironment,
		DialContext:         (&net.Dialer{Timeout: 10 * time.Second, KeepAlive: 30 * time.Second}).DialContext,
		MaxIdleConns:        conns,
		MaxIdleConnsPerHost: conns,
		IdleConnTimeout:     90 * time.Second,
		TLSHandshakeTimeout: 10 * time.Second,
		ForceAttemptHTTP2:   true,
	}
}

// do sends one JSON request and decodes a 2xx answer into out (when not nil).
// A non-2xx answer becomes an *APIError with the server's code, message,
// field and status unchanged.
func (c *Client) do(ctx context.Context, method, path string, in, out any) error {
	var body io.Reader
	if in != nil {
		b, err := json.Marshal(in)
		if err != nil {
			return fmt.Errorf("madeira: encode request: %w", err)
		}
		body = bytes.NewReader(b)
	}
	req, err := http.NewRequestWithContext(ctx, method, c.base+path, body)
	if err != nil {
		return err
	}
	if in != nil {
		req.Header.Set("Content-Type", "application/json")
	}
	req.Header.Set("Accept", "application/json")
	if c.token != "" {
		req.Header.Set("Authorization", "Bearer "+c.token)
	}
	resp, err := c.http.Do(req)
	if err != nil {
		return err
	}
	defer resp.Body.Close()
	data, err := io.ReadAll(resp.Body)
	if err != nil {
		return err
	}
	if resp.StatusCode < 200 || resp.StatusCode > 299 {
		return apiError(resp, data)
	}
	if out == nil {
		return nil
	}
	if err := json.Unmarshal(data, out); err != nil {
		return fmt.Errorf("madeira: decode %s %s answer: %w", method, path, err)
	}
	return nil
}

func apiError(resp *http.Response, data []byte) error {
	var env struct {
		Error *struct {
			Code    string `json:"code"`
			Message string `json:"message"`
			Field   string `json:"field"`
		} `json:"error"`
	}
	e := &APIError{Status: resp.StatusCode}
	if json.Unmarshal(data, &env) == nil && env.Error != nil {
		e.Code, e.Message, e.Field = env.Error.Code, env.Error.Message, env.Error.Field
	} else {
		e.Code = "http_" + strconv.Itoa(resp.StatusCode)
		e.Message = strings.TrimSpace(string(data))
	}
	if s := resp.Header.Get("Retry-After"); s != "" {
		if secs, err := strconv.Atoi(s); err == nil {
			e.RetryAfter = time.Duration(secs) * time.Second
		}
	}
	return e
}

// isLeaseLost reports a 409 lease_lost answer.
func isLeaseLost(err error) bool {
	var api *APIError
	return errors.As(err, &api) && api.Code == "lease_lost"
}
