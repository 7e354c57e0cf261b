package sandbox

import (
	"context"
	"testing"
	"time"

	"github.com/moby/moby/client"
)

// TestPoolLifecycle checks that warm containers serve runs once each, are
// replaced, and are all gone after Close; and that Reap spares live owners.
func TestPoolLifecycle(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// Other runners of this test process share the owner label; only the
	// containers that appear after this one starts are its own.
	baseline := map[string]bool{}
	if cli, err := newDockerClient(ctx); err == nil {
		l, err := cli.ContainerList(ctx, client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", labelOwner+"="+ownerID())})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range l.Items {
			baseline[c.ID] = true
		}
		cli.Close()
	}
	r, err := New(ctx, Config{Backend: "docker", PoolSize: 2, Slots: 2, Profiles: []string{"python"}})
	if err != nil {
		unavailable(t, "docker: %v", err)
	}
	t.Cleanup(func() { r.Close() })
	d := inner(r).(*dockerRunner)
	waitWarm(t, r)
	seen := map[string]bool{}
	for i := range 3 {
		res := run(t, r, Spec{Profile: "python", Cmd: sh("hostname; cat /proc/1/cpuset >/dev/null; echo $$")})
		if res.ExitCode != 0 {
			t.Fatalf("run %d: %+v", i, res)
		}
		waitWarm(t, r)
	}
	list := func() []string {
		l, err := d.cli.ContainerList(ctx, client.ContainerListOptions{All: true,
			Filters: make(client.Filters).Add("label", labelRunner+"="+d.id)})
		if err != nil {
			t.Fatal(err)
		}
		var ids []string
		for _, c := range l.Items {
			if baseline[c.ID] {
				continue
			}
			ids = append(ids, c.ID)
			if seen[c.ID] {
				t.Errorf("container %s listed twice", short(c.ID))
			}
			seen[c.ID] = true
		}
		return ids
	}
	d.settle()
	if ids := list(); len(ids) != 2 {
		t.Fatalf("%d containers, want the 2 warm ones", len(ids))
	}
	if _, err := Reap(ctx); err != nil {
		t.Fatalf("Reap: %v", err)
	}
	clear(seen)
	if ids := list(); len(ids) != 2 {
		t.Fatalf("Reap took containers of a live owner: %d left", len(ids))
	}
	if err := r.Close(); err != nil {
		t.Fatal(err)
	}
	clear(seen)
	if ids := list(); len(ids) != 0 {
		t.Fatalf("%d containers left after Close", len(ids))
	}
}

func TestLeaked(t *testing.T) {
	old := time.Now().Add(-48 * time.Hour)
	cases := []struct {
		name, owner string
		created     time.Time
		want        bool
	}{
		{"no owner", "", time.Now(), true},
		{"live here", "h/1", time.Now(), false},
		{"dead here", "h/999999999", time.Now(), true},
		{"other host, new", "other/1", time.Now(), false},
		{"other host, old", "other/1", old, true},
	}
	for _, tc := range cases {
		if got := leaked(tc.owner, "h", tc.created); got != tc.want {
			t.Errorf("%s: leaked = %v, want %v", tc.name, got, tc.want)
		}
	}
}
