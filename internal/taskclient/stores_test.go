package taskclient

import "testing"

func TestStoreOfWorkerIdentity(t *testing.T) {
	if got := storeOf(WorkerIdentity("0123abcd")); got != "0123abcd" {
		t.Errorf("storeOf(WorkerIdentity(0123abcd)) = %q", got)
	}
	// The SDK's default identity, and a host name with "store=" in it,
	// name no store.
	for _, id := range []string{"4242@host@", "4242@store=x@"} {
		if got := storeOf(id); got != "" {
			t.Errorf("storeOf(%q) = %q, want none", id, got)
		}
	}
}
