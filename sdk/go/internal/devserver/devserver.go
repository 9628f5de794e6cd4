// Package devserver starts a throwaway `madeira serve` on a loopback port
// with a fresh data directory, for tests and the benchmark.
package devserver

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"time"
)

// Server is a running madeira process.
type Server struct {
	URL     string
	cmd     *exec.Cmd
	dataDir string
	exited  chan struct{}
}

// Binary is $MADEIRA_BIN, else <repo>/build/madeira.
func Binary() string {
	if b := os.Getenv("MADEIRA_BIN"); b != "" {
		return b
	}
	if root, err := RepoRoot(); err == nil {
		return filepath.Join(root, "build", "madeira")
	}
	return "madeira"
}

// RepoRoot walks up from the working directory to the directory holding
// sdk/testdata.
func RepoRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		if st, err := os.Stat(filepath.Join(dir, "sdk", "testdata")); err == nil && st.IsDir() {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", errors.New("devserver: repository root (with sdk/testdata) not found")
		}
		dir = parent
	}
}

// Start runs `madeira serve --listen 127.0.0.1:0 --data-dir <fresh temp dir>`
// plus extra arguments, reads the port from the first stdout line and waits
// (bounded) for GET /healthz.
func Start(extra ...string) (*Server, error) {
	bin := Binary()
	dataDir, err := os.MkdirTemp("", "madeira-go-sdk-")
	if err != nil {
		return nil, err
	}
	args := append([]string{"serve", "--listen", "127.0.0.1:0", "--data-dir", dataDir}, extra...)
	cmd := exec.Command(bin, args...)
	cmd.Stderr = io.Discard
	if os.Getenv("MADEIRA_SERVER_LOG") != "" {
		cmd.Stderr = os.Stderr
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		os.RemoveAll(dataDir)
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		os.RemoveAll(dataDir)
		return nil, fmt.Errorf("devserver: start %s: %w", bin, err)
	}
	s := &Server{cmd: cmd, dataDir: dataDir, exited: make(chan struct{})}
	go func() { cmd.Wait(); close(s.exited) }()

	lines := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(stdout)
		if sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
		io.Copy(io.Discard, stdout)
	}()
	select {
	case line, ok := <-lines:
		addr, found := strings.CutPrefix(line, "listening on ")
		if !ok || !found {
			s.Close()
			return nil, fmt.Errorf("devserver: unexpected first line %q", line)
		}
		s.URL = "http://" + strings.TrimSpace(addr)
	case <-time.After(15 * time.Second):
		s.Close()
		return nil, errors.New("devserver: no 'listening on' line within 15 s")
	}
	if err := s.waitHealthy(15 * time.Second); err != nil {
		s.Close()
		return nil, err
	}
	return s, nil
}

func (s *Server) waitHealthy(limit time.Duration) error {
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	for {
		req, _ := http.NewRequestWithContext(ctx, "GET", s.URL+"/healthz", nil)
		if resp, err := http.DefaultClient.Do(req); err == nil {
			resp.Body.Close()
			if resp.StatusCode == 200 {
				return nil
			}
		}
		select {
		case <-ctx.Done():
			return errors.New("devserver: /healthz not OK within the limit")
		case <-s.exited:
			return errors.New("devserver: madeira exited during start-up")
		case <-time.After(20 * time.Millisecond):
		}
	}
}

// Close kills the server and removes its data directory.
func (s *Server) Close() {
	if s.cmd.Process != nil {
		s.cmd.Process.Kill()
	}
	select {
	case <-s.exited:
	case <-time.After(10 * time.Second):
	}
	os.RemoveAll(s.dataDir)
}
