package worker

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"log/slog"
	"net/url"
	"os"
	"path/filepath"
	"time"

	"go.temporal.io/api/serviceerror"
	"go.temporal.io/sdk/activity"
	"go.temporal.io/sdk/client"
	"go.temporal.io/sdk/interceptor"
	"go.temporal.io/sdk/temporal"

	"github.com/autocoder/autocoder/internal/owner"
)

// ErrTypeWorkerLost is the failure a worker gives the activities a dead
// predecessor left running; Temporal retries them.
const ErrTypeWorkerLost = "WorkerLost"

// inFlight records the task token of every activity this process runs, a
// file each in a folder of its own under dir, for as long as it runs. A
// worker killed with its activities running leaves its records behind; the
// next worker started on the same data dir fails those activities at once
// (failOrphans), and Temporal retries them then, where it would otherwise
// wait for their heartbeat timeout to notice.
type inFlight struct {
	interceptor.WorkerInterceptorBase
	client client.Client // fails the orphans
	dir    string        // this process's folder
}

func newInFlight(c client.Client, base string) *inFlight {
	return &inFlight{client: c, dir: filepath.Join(base, url.PathEscape(owner.ID()))}
}

// start fails what crashed workers left running (failOrphans), then makes
// this process's folder. Without it the worker runs as before: a crash's
// activities wait for their heartbeat timeout.
func (f *inFlight) start() {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	n, err := failOrphans(ctx, f.client, filepath.Dir(f.dir))
	cancel()
	if err != nil {
		slog.Warn("activities of crashed workers are retried after their heartbeat timeout", "error", err)
	}
	if n > 0 {
		slog.Info("activities of crashed workers retried at once", "count", n)
	}
	if err := os.MkdirAll(f.dir, 0o700); err != nil {
		slog.Warn("in-flight activities are not recorded: a crash's activities are retried after their heartbeat timeout", "error", err)
		f.dir = ""
	}
}

// record notes a running activity until the returned done is called. The
// record only has to outlive this process, not the machine: no fsync.
func (f *inFlight) record(token []byte) (done func()) {
	if f.dir == "" {
		return func() {}
	}
	sum := sha256.Sum256(token)
	name := filepath.Join(f.dir, hex.EncodeToString(sum[:16]))
	if err := os.WriteFile(name, token, 0o600); err != nil {
		slog.Warn("record in-flight activity", "error", err)
		return func() {}
	}
	return func() { _ = os.Remove(name) }
}

// InterceptActivity records each activity this worker runs.
func (f *inFlight) InterceptActivity(_ context.Context, next interceptor.ActivityInboundInterceptor) interceptor.ActivityInboundInterceptor {
	return &recordActivity{ActivityInboundInterceptorBase: interceptor.ActivityInboundInterceptorBase{Next: next}, f: f}
}

type recordActivity struct {
	interceptor.ActivityInboundInterceptorBase
	f *inFlight
}

func (r *recordActivity) ExecuteActivity(ctx context.Context, in *interceptor.ExecuteActivityInput) (any, error) {
	defer r.f.record(activity.GetInfo(ctx).TaskToken)()
	return r.Next.ExecuteActivity(ctx, in)
}

// failOrphans fails the activities that processes gone from this host left
// running, per their records under base, and removes the records. An
// activity that has since finished or timed out is no longer found, and
// is left alone; a record the server cannot read is dropped. A record is
// kept only when the server could not be asked. It returns how many
// activities it failed.
func failOrphans(ctx context.Context, c client.Client, base string) (int, error) {
	owners, err := os.ReadDir(base)
	if errors.Is(err, os.ErrNotExist) {
		return 0, nil
	} else if err != nil {
		return 0, fmt.Errorf("read in-flight activity records: %w", err)
	}
	host, _ := os.Hostname()
	failed := 0
	var errs []error
	for _, o := range owners {
		id, err := url.PathUnescape(o.Name())
		if err != nil || !o.IsDir() {
			continue
		}
		if gone, local := owner.Gone(id, host); !gone || !local {
			continue
		}
		dir := filepath.Join(base, o.Name())
		records, err := os.ReadDir(dir)
		if err != nil {
			errs = append(errs, fmt.Errorf("read in-flight activity records: %w", err))
			continue
		}
		for _, r := range records {
			name := filepath.Join(dir, r.Name())
			token, err := os.ReadFile(name)
			if err != nil {
				errs = append(errs, fmt.Errorf("read in-flight activity record: %w", err))
				continue
			}
			lost := temporal.NewApplicationError("the worker running this activity died ("+id+")", ErrTypeWorkerLost)
			err = c.CompleteActivity(ctx, token, nil, lost)
			var notFound *serviceerror.NotFound
			var invalid *serviceerror.InvalidArgument // not a token the server can read
			switch {
			case err == nil:
				failed++
			case errors.As(err, &notFound), errors.As(err, &invalid):
			default:
				errs = append(errs, fmt.Errorf("fail activity of %s: %w", id, err))
				continue // kept for the next worker to try
			}
			_ = os.Remove(name)
		}
		_ = os.Remove(dir) // fails while records are kept
	}
	return failed, errors.Join(errs...)
}
