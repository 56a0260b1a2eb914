package startup

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/redis/rueidis"

	"flashsale/deploy/testenv"
)

func quiet() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// refused is a real dial error: nothing listens on the port.
func refused(t *testing.T) error {
	t.Helper()
	_, err := net.DialTimeout("tcp", testenv.FreeAddr(t), time.Second)
	if err == nil {
		t.Fatal("dial of a closed port succeeded")
	}
	return err
}

func TestTransientSortsWaitableFromConfigurationErrors(t *testing.T) {
	dial := refused(t)
	cases := []struct {
		name string
		err  error
		want bool
	}{
		{"connection refused", fmt.Errorf("connecting to redis [x]: %w", dial), true},
		{"name not resolved", &net.DNSError{Err: "no such host", Name: "redis-0", IsNotFound: true}, true},
		{"attempt timed out", fmt.Errorf("loading sales: %w", context.DeadlineExceeded), true},
		{"connection closed", io.EOF, true},
		{"slot without node", fmt.Errorf("loading scripts: %w", rueidis.ErrNoSlot), true},
		{"postgres starting", &pgconn.PgError{Code: "57P03", Message: "the database system is starting up"}, true},
		{"postgres connection exception", &pgconn.PgError{Code: "08006"}, true},
		{"postgres wrong password", &pgconn.PgError{Code: "28P01", Message: "password authentication failed"}, false},
		{"postgres missing database", &pgconn.PgError{Code: "3D000"}, false},
		{"malformed sale", errors.New("sale 42: item 4201: quantity -1"), false},
		{"cancelled", context.Canceled, false},
		{"nil", nil, false},
		{"says it is transient", fmt.Errorf("first beat: %w", says(true)), true},
		{"says it is not", fmt.Errorf("first beat: %w", says(false)), false},
	}
	for _, c := range cases {
		if got := Transient(c.err); got != c.want {
			t.Errorf("%s (%v): Transient = %v, want %v", c.name, c.err, got, c.want)
		}
	}
}

// TestTransientRedisReplies reads real error replies: a cluster node that
// serves no slot yet (CLUSTERDOWN, what every node of a cluster answers while
// it forms) is waited out; a wrong password or a missing permission on the
// local cluster is not.
func TestTransientRedisReplies(t *testing.T) {
	if testing.Short() {
		t.Skip("real Redis: skipped with -short")
	}
	down := testenv.LoneRedis(t, "--cluster-enabled", "yes") // no slot assigned
	_, err := down.Do(context.Background(), down.B().Get().Key("k").Build()).ToString()
	if !strings.HasPrefix(fmt.Sprint(err), "CLUSTERDOWN") || !Transient(fmt.Errorf("loading sales: %w", err)) {
		t.Errorf("a node serving no slot: %v, Transient = %v, want a CLUSTERDOWN waited out", err, Transient(err))
	}
	u := testenv.NewRedisUser(t, "~*", "+@all", "-get")
	_, err = rueidis.NewClient(rueidis.ClientOption{InitAddress: testenv.RedisAddrs(), Username: u.Name, Password: "wrong", DisableCache: true})
	if !strings.Contains(fmt.Sprint(err), "WRONGPASS") || Transient(fmt.Errorf("connecting to redis: %w", err)) {
		t.Errorf("a wrong password: %v, Transient = %v, want a WRONGPASS not waited out", err, Transient(err))
	}
	c := u.Client()
	_, err = c.Do(context.Background(), c.B().Get().Key("k").Build()).ToString()
	if !strings.HasPrefix(fmt.Sprint(err), "NOPERM") || Transient(fmt.Errorf("loading sales: %w", err)) {
		t.Errorf("a missing permission: %v, Transient = %v, want a NOPERM not waited out", err, Transient(err))
	}
}

func TestUntilWaitsOutTransientErrorsAndNotesThem(t *testing.T) {
	dial := refused(t)
	var st State
	if err := st.Err(); err == nil || err.Error() != "starting" {
		t.Fatalf("zero State: %v, want starting", err)
	}
	calls := 0
	seen := make(chan string, 1)
	err := Wait{What: "redis", Log: quiet(), State: &st}.Until(context.Background(), func(ctx context.Context) error {
		calls++
		if _, ok := ctx.Deadline(); !ok {
			t.Error("an attempt has no deadline")
		}
		if calls == 3 {
			seen <- st.Err().Error()
			return nil
		}
		return fmt.Errorf("connecting to redis: %w", dial)
	})
	if err != nil || calls != 3 {
		t.Fatalf("Until = %v after %d calls, want nil after 3", err, calls)
	}
	if msg := <-seen; !strings.HasPrefix(msg, "starting: waiting for redis: connecting to redis: dial tcp") {
		t.Errorf("State while waiting: %q", msg)
	}
	if st.Err() == nil {
		t.Error("Until's success must not end the start: the caller's Done does")
	}
	st.Done()
	if err := st.Err(); err != nil {
		t.Errorf("after Done: %v", err)
	}
}

func TestUntilStopsAtAConfigurationError(t *testing.T) {
	bad := errors.New("WRONGPASS-like: bad credentials")
	calls := 0
	err := Wait{What: "redis", Log: quiet()}.Until(context.Background(), func(context.Context) error {
		calls++
		return bad
	})
	if !errors.Is(err, bad) || calls != 1 {
		t.Errorf("Until = %v after %d calls, want the error after 1", err, calls)
	}
}

func TestUntilGivesUpAfterMax(t *testing.T) {
	dial := refused(t)
	began := time.Now()
	err := Wait{What: "postgresql", Max: 300 * time.Millisecond, Log: quiet()}.Until(context.Background(), func(context.Context) error {
		return dial
	})
	if err == nil || !strings.Contains(err.Error(), "postgresql did not answer within 300ms") || !errors.Is(err, dial) {
		t.Errorf("Until = %v", err)
	}
	if d := time.Since(began); d < 300*time.Millisecond || d > 3*time.Second {
		t.Errorf("gave up after %v, want soon after 300ms", d)
	}
}

func TestUntilEndsWithItsContext(t *testing.T) {
	dial := refused(t)
	ctx, cancel := context.WithTimeout(context.Background(), 150*time.Millisecond)
	defer cancel()
	err := Wait{What: "redis", Log: quiet()}.Until(ctx, func(context.Context) error { return dial })
	if !errors.Is(err, context.DeadlineExceeded) || !strings.Contains(err.Error(), "stopped while waiting for redis") {
		t.Errorf("Until = %v, want the context's end", err)
	}
}

// says is an error that tells itself whether it is transient (as
// journal.BeatError does).
type says bool

func (s says) Error() string   { return "an error that knows" }
func (s says) Transient() bool { return bool(s) }
