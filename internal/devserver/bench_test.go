package devserver

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	sdklog "go.temporal.io/sdk/log"
	"go.temporal.io/sdk/worker"
	"go.temporal.io/sdk/workflow"
)

const roundTripQueue = "devserver-bench"

// roundTrips has the shape of an agent's retry with the work taken out:
// an activity on the workflow's own task queue (dispatched eagerly, as
// generation is), then one on a second queue (as a sandbox run is), n
// times. Each round trip costs two workflow tasks and two activities.
func roundTrips(ctx workflow.Context, n int) error {
	opts := workflow.ActivityOptions{StartToCloseTimeout: time.Minute}
	local := workflow.WithActivityOptions(ctx, opts)
	opts.TaskQueue = roundTripQueue + "-second"
	second := workflow.WithActivityOptions(ctx, opts)
	for i := range n {
		if err := workflow.ExecuteActivity(local, greeting, "first").Get(ctx, nil); err != nil {
			return fmt.Errorf("round trip %d: %w", i, err)
		}
		if err := workflow.ExecuteActivity(second, greeting, "second").Get(ctx, nil); err != nil {
			return fmt.Errorf("round trip %d: %w", i, err)
		}
	}
	return nil
}

// BenchmarkRoundTrip measures one round trip of roundTrips on this
// embedded server (embedded) against the same server with history's task
// queue reads at the rate sized for clusters (cluster-queue-reads), in the
// same run. Each sub-benchmark has a server and workers of its own.
func BenchmarkRoundTrip(b *testing.B) {
	for _, bc := range []struct {
		name              string
		clusterQueueReads bool
	}{{"cluster-queue-reads", true}, {"embedded", false}} {
		var c client.Client
		stop := func() {}
		b.Run(bc.name, func(sub *testing.B) {
			if c == nil {
				c, stop = startRoundTripServer(b, sub, bc.clusterQueueReads)
				sub.ResetTimer()
			}
			ctx := context.Background()
			run, err := c.ExecuteWorkflow(ctx, client.StartWorkflowOptions{TaskQueue: roundTripQueue}, roundTrips, sub.N)
			if err != nil {
				sub.Fatal(err)
			}
			if err := run.Get(ctx, nil); err != nil {
				sub.Fatal(err)
			}
		})
		stop()
	}
}

// startRoundTripServer starts a server and the workers of roundTrips. The
// repeated runs of a sub-benchmark share them, so they belong to the
// parent benchmark, owner; stop ends them sooner. Failures go to t.
func startRoundTripServer(owner *testing.B, t testing.TB, clusterQueueReads bool) (client.Client, func()) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	srv, err := Start(ctx, Options{DataDir: owner.TempDir(), UIPort: NoUI, Logger: testLogger(), clusterQueueReads: clusterQueueReads})
	if err != nil {
		t.Fatalf("start: %v", err)
	}
	c, err := client.Dial(client.Options{HostPort: srv.FrontendAddress(), Namespace: srv.Namespace(),
		Logger: sdklog.NewStructuredLogger(testLogger())})
	if err != nil {
		_ = srv.Stop()
		t.Fatalf("dial: %v", err)
	}
	first := worker.New(c, roundTripQueue, worker.Options{})
	first.RegisterWorkflow(roundTrips)
	first.RegisterActivity(greeting)
	second := worker.New(c, roundTripQueue+"-second", worker.Options{DisableWorkflowWorker: true})
	second.RegisterActivity(greeting)
	stop := sync.OnceFunc(func() {
		first.Stop()
		second.Stop()
		c.Close()
		_ = srv.Stop()
	})
	owner.Cleanup(stop)
	for _, w := range []worker.Worker{first, second} {
		if err := w.Start(); err != nil {
			t.Fatalf("start worker: %v", err)
		}
	}
	return c, stop
}
