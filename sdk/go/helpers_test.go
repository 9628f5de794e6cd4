package madeira

import (
	"crypto/rand"
	"encoding/hex"
	"encoding/json"
	"os"
	"path/filepath"
	"sync"
	"testing"

	"github.com/madeira-dev/madeira/sdk/go/internal/devserver"
)

// readVector decodes a shared vector file from ../testdata (never copied).
func readVector(t *testing.T, name string, v any) {
	t.Helper()
	data, err := os.ReadFile(filepath.Join("..", "testdata", name))
	if err != nil {
		t.Fatalf("read vector: %v", err)
	}
	if err := json.Unmarshal(data, v); err != nil {
		t.Fatalf("decode %s: %v", name, err)
	}
}

var (
	serverOnce sync.Once
	server     *devserver.Server
	serverErr  error
)

// testClient returns a client for the one madeira server the package's tests
// share (started on first use, killed by TestMain).
func testClient(t *testing.T) *Client {
	t.Helper()
	serverOnce.Do(func() { server, serverErr = devserver.Start() })
	if serverErr != nil {
		t.Fatalf("start madeira (%s): %v", devserver.Binary(), serverErr)
	}
	c, err := NewClient(server.URL)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func TestMain(m *testing.M) {
	code := m.Run()
	if server != nil {
		server.Close()
	}
	os.Exit(code)
}

// uniqueQueue is a queue name no other test uses.
func uniqueQueue(prefix string) string {
	var b [6]byte
	_, _ = rand.Read(b[:])
	return prefix + "-" + hex.EncodeToString(b[:])
}
