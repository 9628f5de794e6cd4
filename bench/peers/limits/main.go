// limits measures what this machine allows at best, for Madeira's peer benchmark:
//
//	limits http  [-conns 64] [-seconds 5]   loopback HTTP/1.1 requests/s of a trivial keep-alive
//	                                         server (a child process) under a lean closed-loop client
//	limits fsync [-dir DIR] [-seconds 3]     appends of 64 bytes + fdatasync per second
//
// Each prints one JSON line per figure. Redis pipelined XADD/s is measured by run.sh with
// redis-benchmark.
package main

import (
	"bufio"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"io"
	"log"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"syscall"
	"time"
)

type result struct {
	Peer     string         `json:"peer"`
	ID       string         `json:"id"`
	What     string         `json:"what"`
	Unit     string         `json:"unit"`
	Value    float64        `json:"value"`
	Settings map[string]any `json:"settings,omitempty"`
}

func emit(r result) {
	r.Peer = "limit"
	enc := json.NewEncoder(os.Stdout)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(r); err != nil {
		log.Fatal(err)
	}
}

func main() {
	log.SetFlags(0)
	log.SetPrefix("limits: ")
	if len(os.Args) < 2 {
		log.Fatal("usage: limits http|http-server|fsync [flags]")
	}
	cmd, args := os.Args[1], os.Args[2:]
	var err error
	switch cmd {
	case "http":
		err = runHTTP(args)
	case "http-server":
		err = serveHTTP(args)
	case "fsync":
		err = runFsync(args)
	default:
		err = fmt.Errorf("unknown command %q", cmd)
	}
	if err != nil {
		log.Fatal(err)
	}
}

// serveHTTP is the trivial server: every request gets 202 and a 2-byte body, keep-alive.
func serveHTTP(args []string) error {
	fs := flag.NewFlagSet("http-server", flag.ExitOnError)
	addr := fs.String("addr", "127.0.0.1:0", "listen address")
	_ = fs.Parse(args)
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		return err
	}
	fmt.Printf("listening on %s\n", ln.Addr())
	ok := []byte("{}")
	return http.Serve(ln, http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		_, _ = io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "application/json")
		w.WriteHeader(http.StatusAccepted)
		_, _ = w.Write(ok)
	}))
}

// envelope is about the size of Madeira's single-task submit (bench/workload.cc).
func envelope() string {
	p := `{"order_id":202509110001,"store_id":"S10086","customer":"c-000042",` +
		`"items":[{"sku":"A-1","qty":2},{"sku":"B-7","qty":1}],"note":"`
	p += strings.Repeat("x", 298-len(p)) + `"}`
	return `{"task_type":"bench.noop","queue":"bench","payload_version":1,"payload":` + p + `}`
}

// runHTTP starts the server as a child process (so it has its own runtime, as a real server
// would) and loads it with `conns` keep-alive connections, one request in flight on each.
func runHTTP(args []string) error {
	fs := flag.NewFlagSet("http", flag.ExitOnError)
	conns := fs.Int("conns", 64, "keep-alive connections, one request in flight each")
	seconds := fs.Float64("seconds", 5, "how long to load")
	_ = fs.Parse(args)

	self, err := os.Executable()
	if err != nil {
		return err
	}
	server := exec.Command(self, "http-server")
	server.Stderr = os.Stderr
	out, err := server.StdoutPipe()
	if err != nil {
		return err
	}
	if err := server.Start(); err != nil {
		return err
	}
	defer func() {
		_ = server.Process.Kill()
		_ = server.Wait()
	}()
	line, err := bufio.NewReader(out).ReadString('\n')
	if err != nil {
		return fmt.Errorf("http-server: %w", err)
	}
	addr := strings.TrimSpace(strings.TrimPrefix(line, "listening on "))

	body := envelope()
	request := []byte("POST /v1/tasks HTTP/1.1\r\nHost: " + addr +
		"\r\nContent-Type: application/json\r\nContent-Length: " + strconv.Itoa(len(body)) +
		"\r\n\r\n" + body)
	var done atomic.Int64
	stop := make(chan struct{})
	var wg sync.WaitGroup
	errs := make(chan error, *conns)
	for range *conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			return err
		}
		defer c.Close()
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := bufio.NewReaderSize(c, 4096)
			for {
				select {
				case <-stop:
					return
				default:
				}
				if _, err := c.Write(request); err != nil {
					errs <- err
					return
				}
				if err := readResponse(r); err != nil {
					errs <- err
					return
				}
				done.Add(1)
			}
		}()
	}
	start := time.Now()
	time.Sleep(time.Duration(*seconds * float64(time.Second)))
	close(stop)
	n := done.Load()
	elapsed := time.Since(start).Seconds()
	wg.Wait()
	close(errs)
	if err := <-errs; err != nil {
		return err
	}
	emit(result{ID: "limit.http", What: "loopback HTTP/1.1 requests/s, trivial Go net/http server",
		Unit: "requests/s", Value: float64(n) / elapsed,
		Settings: map[string]any{"connections": *conns, "seconds": *seconds, "request_bytes": len(request)}})
	return nil
}

// readResponse reads one HTTP/1.1 response with a Content-Length body and expects a 2xx.
func readResponse(r *bufio.Reader) error {
	status, err := r.ReadString('\n')
	if err != nil {
		return err
	}
	if !strings.HasPrefix(status, "HTTP/1.1 2") {
		return fmt.Errorf("unexpected status %q", strings.TrimSpace(status))
	}
	length := 0
	for {
		line, err := r.ReadString('\n')
		if err != nil {
			return err
		}
		line = strings.TrimRight(line, "\r\n")
		if line == "" {
			break
		}
		if k, v, ok := strings.Cut(line, ":"); ok && strings.EqualFold(k, "Content-Length") {
			if length, err = strconv.Atoi(strings.TrimSpace(v)); err != nil {
				return err
			}
		}
	}
	_, err = r.Discard(length)
	return err
}

// runFsync appends 64 bytes and calls fdatasync, as a write-ahead log commit does, for
// `seconds`; reports commits/s and the p50/p99 commit time.
func runFsync(args []string) error {
	fs := flag.NewFlagSet("fsync", flag.ExitOnError)
	dir := fs.String("dir", os.TempDir(), "directory of the scratch file")
	seconds := fs.Float64("seconds", 3, "how long to commit")
	size := fs.Int("bytes", 64, "bytes appended per commit")
	_ = fs.Parse(args)

	f, err := os.CreateTemp(*dir, "fdatasync-*.log")
	if err != nil {
		return err
	}
	defer os.Remove(f.Name())
	defer f.Close()
	record := []byte(strings.Repeat("r", *size-1) + "\n")
	var took []float64
	start := time.Now()
	deadline := start.Add(time.Duration(*seconds * float64(time.Second)))
	for time.Now().Before(deadline) {
		t := time.Now()
		if _, err := f.Write(record); err != nil {
			return err
		}
		if err := syscall.Fdatasync(int(f.Fd())); err != nil {
			return errors.Join(errors.New("fdatasync"), err)
		}
		took = append(took, float64(time.Since(t).Microseconds()))
	}
	elapsed := time.Since(start).Seconds()
	slices.Sort(took)
	settings := map[string]any{"dir": filepath.Dir(f.Name()), "bytes": *size, "seconds": *seconds,
		"p50_us": took[len(took)/2], "p99_us": took[len(took)*99/100]}
	emit(result{ID: "limit.fdatasync", What: "append + fdatasync per second, one file", Unit: "ops/s",
		Value: float64(len(took)) / elapsed, Settings: settings})
	return nil
}
