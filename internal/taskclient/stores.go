package taskclient

import (
	"context"
	"fmt"
	"os"
	"slices"
	"strings"

	enumspb "go.temporal.io/api/enums/v1"

	"github.com/autocoder/autocoder/workflows"
)

// A worker names the store it reads in its identity, which the server
// keeps with each poller of a task queue and the Web UI shows with each
// activity the worker ran. A client of a cluster compares it with its own
// store: a task's project must be uploaded where the workers read it, and
// its results are read where the workers wrote them.

// storeMark comes before the store's ID in a worker's identity.
const storeMark = "store="

// WorkerIdentity is the identity of a worker that reads the store with
// this ID: the SDK's default (pid@host@) followed by the store.
func WorkerIdentity(storeID string) string {
	host, _ := os.Hostname()
	return fmt.Sprintf("%d@%s@ %s%s", os.Getpid(), host, storeMark, storeID)
}

// storeOf is the store a worker's identity names; "" for none.
func storeOf(identity string) string {
	_, id, ok := strings.Cut(identity, " "+storeMark)
	if !ok {
		return ""
	}
	return id
}

// WorkerStores are the stores of the workers that polled the task queue
// for activities lately (those are the ones that read the store), each
// once; unnamed counts the workers that name none (of an older release).
// The server keeps a poller for a few minutes, so a worker that stopped
// lately may still be among them.
func (c *Client) WorkerStores(ctx context.Context) (stores []string, unnamed int, err error) {
	d, err := c.sdk.DescribeTaskQueue(ctx, workflows.TaskQueue, enumspb.TASK_QUEUE_TYPE_ACTIVITY)
	if err != nil {
		return nil, 0, fmt.Errorf("describe task queue %s: %w", workflows.TaskQueue, classify(err))
	}
	for _, p := range d.GetPollers() {
		id := storeOf(p.GetIdentity())
		switch {
		case id == "":
			unnamed++
		case !slices.Contains(stores, id):
			stores = append(stores, id)
		}
	}
	return stores, unnamed, nil
}
