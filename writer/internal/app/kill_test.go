package app_test

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"testing"
	"time"

	"flashsale/deploy/testenv"
	"flashsale/writer/internal/store"
)

// TestSIGKILL kills the writer binary with SIGKILL three times while 10,000
// reservations flow in, restarting it each time; in the end every event is a
// row exactly once and sold = 10,000. The last process is stopped with
// SIGTERM and must exit cleanly.
func TestSIGKILL(t *testing.T) {
	stack(t)
	st, rs := newStores(t)
	const n = 10000
	s := newSale(t, st, rs, 3, n)
	item := s.Items[0].ID
	topic := testenv.NewTopic(t, "writer-kill")

	bin := filepath.Join(t.TempDir(), "writer")
	build := exec.Command("go", "build", "-o", bin, "./writer")
	build.Dir = repoRoot(t)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("building the writer: %v\n%s", err, out)
	}

	group := groupName(t)
	logs := &bytes.Buffer{}
	var logMu sync.Mutex
	start := func(i int) *exec.Cmd {
		cmd := exec.Command(bin, "run", "-admin=", "-session-timeout=6s", "-batch-size=500",
			"-fetch-max-wait=20ms", "-instance-id="+group, fmt.Sprintf("-sales=%d", s.ID), "-outbox-interval=200ms")
		cmd.Env = append(os.Environ(),
			"DATABASE_URL="+testenv.DatabaseURL(), "KAFKA_BROKERS="+testenv.KafkaBrokers()[0],
			"FLASHSALE_TOPIC="+topic, "FLASHSALE_DLQ_TOPIC="+topic+".dlq", "FLASHSALE_GROUP="+group,
			"FLASHSALE_LOG_LEVEL=info")
		w := &prefixWriter{mu: &logMu, buf: logs, prefix: fmt.Sprintf("[writer %d] ", i)}
		cmd.Stdout, cmd.Stderr = w, w
		if err := cmd.Start(); err != nil {
			t.Fatalf("starting the writer: %v", err)
		}
		return cmd
	}
	defer func() {
		if t.Failed() {
			logMu.Lock()
			t.Logf("writer logs:\n%s", logs.String())
			logMu.Unlock()
		}
	}()

	events := reservations(s, item, n, 10*time.Minute)
	cl := newProducer(t, topic)
	var wg sync.WaitGroup
	wg.Go(func() {
		for i := 0; i < n; i += 200 {
			produce(t, cl, events[i:i+200])
			time.Sleep(100 * time.Millisecond)
		}
	})

	rows := func() int64 {
		byStatus, _ := counts(t, st.Pool(), s.ID)
		return total(byStatus)
	}
	for i := range 3 {
		cmd := start(i)
		time.Sleep(time.Duration(600+rand.IntN(600)) * time.Millisecond)
		if err := cmd.Process.Kill(); err != nil {
			t.Fatalf("SIGKILL: %v", err)
		}
		_ = cmd.Wait()
		t.Logf("kill %d: %d rows so far", i+1, rows())
	}
	wg.Wait()
	last := start(3)
	waitFor(t, 90*time.Second, "10,000 rows", func() bool { return rows() >= n })
	waitFor(t, 30*time.Second, "the last writer to be up", func() bool {
		logMu.Lock()
		defer logMu.Unlock()
		return bytes.Contains(logs.Bytes(), []byte("[writer 3] time=")) &&
			bytes.Contains(logs.Bytes()[bytes.Index(logs.Bytes(), []byte("[writer 3] ")):], []byte("writer consuming"))
	})
	if err := last.Process.Signal(syscall.SIGTERM); err != nil {
		t.Fatalf("SIGTERM: %v", err)
	}
	done := make(chan error, 1)
	go func() { done <- last.Wait() }()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("writer exited after SIGTERM with %v, want status 0", err)
		}
	case <-time.After(30 * time.Second):
		_ = last.Process.Kill()
		t.Fatalf("writer ignored SIGTERM for 30s")
	}

	byStatus, sold := counts(t, st.Pool(), s.ID)
	ids := make([][16]byte, n)
	for i, e := range events {
		ids[i] = e.OrderID
	}
	var found int64
	if err := st.Pool().QueryRow(context.Background(), `SELECT count(*) FROM orders WHERE id = ANY($1::uuid[])`, ids).Scan(&found); err != nil {
		t.Fatal(err)
	}
	t.Logf("orders %v, sold %d, event ids found %d", byStatus, sold, found)
	if found != n || byStatus[store.StatusPending] != n || total(byStatus) != n || sold != n {
		t.Fatalf("orders %v, sold %d, %d of %d event ids stored: want every event once and sold %d", byStatus, sold, found, n, n)
	}
}

// prefixWriter collects a child's output, line-prefixed, into a shared buffer.
type prefixWriter struct {
	mu     *sync.Mutex
	buf    *bytes.Buffer
	prefix string
}

func (w *prefixWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for _, line := range bytes.SplitAfter(p, []byte("\n")) {
		if len(line) > 0 {
			w.buf.WriteString(w.prefix)
			w.buf.Write(line)
		}
	}
	return len(p), nil
}
