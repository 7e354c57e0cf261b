package sandbox

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"

	"github.com/autocoder/autocoder/internal/owner"

	"github.com/autocoder/autocoder/internal/testenv"
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
			Filters: make(client.Filters).Add("label", labelOwner+"="+owner.ID())})
		if err != nil {
			t.Fatal(err)
		}
		for _, c := range l.Items {
			baseline[c.ID] = true
		}
		cli.Close()
	}
	r, err := New(ctx, Config{Backend: "docker", PoolSize: 2, Slots: 2, Profiles: []string{"python"}, Warm: []string{"python"}})
	if err != nil {
		testenv.RequireService(t, "docker", err)
	}
	t.Cleanup(func() { r.Close() })
	d := inner(r).(*dockerRunner)
	waitWarm(t, r)
	// Only the pool's first container prewarms, unless each reads the
	// image through its own mount.
	alwaysPrewarm := len(toolchainMounts(t, d, "python")) == 0
	checkPrewarm := func(when string, want ...bool) {
		t.Helper()
		var got []bool
		for _, pl := range d.pools {
			for _, b := range pl.snapshot() {
				ins, err := d.cli.ContainerInspect(ctx, b.id, client.ContainerInspectOptions{})
				if err != nil {
					t.Fatal(err)
				}
				// sh -c script sbx GOCACHE PREWARM READY
				got = append(got, ins.Container.Config.Entrypoint[5] != "")
			}
		}
		for i := range want {
			want[i] = want[i] || alwaysPrewarm
		}
		if !slices.Equal(got, want) {
			t.Errorf("%s: warm containers that prewarmed %v, want %v", when, got, want)
		}
	}
	checkPrewarm("first fill", true, false)
	seen := map[string]bool{}
	for i := range 3 {
		res := run(t, r, Spec{Profile: "python", Cmd: sh("hostname; cat /proc/1/cpuset >/dev/null; echo $$")})
		if res.ExitCode != 0 {
			t.Fatalf("run %d: %+v", i, res)
		}
		waitWarm(t, r)
	}
	checkPrewarm("after refills", false, false)
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
	_, self, _ := strings.Cut(owner.ID(), "/") // as if this host were "h"
	cases := []struct {
		name, owner string
		created     time.Time
		want        bool
	}{
		{"no owner", "", time.Now(), true},
		{"live here", "h/" + self, time.Now(), false},
		{"dead here", "h/999999999/1", time.Now(), true},
		{"other host, new", "other/1/5", time.Now(), false},
		{"other host, old", "other/1/5", old, true},
	}
	for _, tc := range cases {
		if got := leaked(tc.owner, "h", tc.created); got != tc.want {
			t.Errorf("%s: leaked = %v, want %v", tc.name, got, tc.want)
		}
	}
}

// TestToolchainVolumes checks that docker sandboxes read their toolchain
// from read-only volumes, and that Reap removes the volumes of an image
// that is gone.
func TestToolchainVolumes(t *testing.T) {
	r := testRunner(t, "docker", -1)
	d := inner(r).(*dockerRunner)
	for _, profile := range []string{"python", "go"} {
		p, _ := LookupProfile(profile)
		if n := len(toolchainMounts(t, d, profile)); n != len(p.ToolchainDirs) {
			t.Fatalf("%s: %d toolchain mounts, want %d", profile, n, len(p.ToolchainDirs))
		}
		for _, dir := range p.ToolchainDirs {
			res := run(t, r, Spec{Profile: profile, Cmd: sh(`awk '$5 == "` + dir + `" { print $6 }' /proc/self/mountinfo; if touch ` + dir + `/x 2>/dev/null; then echo writable; fi`)})
			if res.ExitCode != 0 || !strings.HasPrefix(res.Stdout, "ro,") || strings.Contains(res.Stdout, "writable") {
				t.Fatalf("%s %s: want a read-only mount of its own, got exit %d %q %q", profile, dir, res.ExitCode, res.Stdout, res.Stderr)
			}
		}
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	gone := namePrefix + "test-" + randomHex(4)
	if _, err := d.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: gone,
		Labels: map[string]string{labelSandbox: "1", labelVolumeImage: "sha256:" + strings.Repeat("0", 64)}}); err != nil {
		t.Fatal(err)
	}
	if _, err := Reap(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := d.cli.VolumeInspect(ctx, gone, client.VolumeInspectOptions{}); err == nil {
		t.Fatal("Reap left the volume of a removed image")
	}
	for _, m := range toolchainMounts(t, d, "python") {
		if _, err := d.cli.VolumeInspect(ctx, m.Source, client.VolumeInspectOptions{}); err != nil {
			t.Fatalf("Reap removed a volume in use: %v", err)
		}
	}
}

// toolchainMounts waits for the fill of a profile's toolchain volumes,
// which starts in the background, and returns their mounts.
func toolchainMounts(t *testing.T, d *dockerRunner, profile string) []mount.Mount {
	t.Helper()
	tc := d.tools[mustProfile(t, profile).Image]
	if tc == nil {
		t.Fatalf("no toolchain volumes for %s", profile)
	}
	select {
	case <-tc.done:
	case <-time.After(5 * time.Minute):
		t.Fatalf("toolchain volumes for %s not filled", profile)
	}
	return tc.mounts
}

func mustProfile(t *testing.T, name string) Profile {
	t.Helper()
	p, err := LookupProfile(name)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWarmRunsAreIsolated checks, on both backends, that a run taken from
// the warm pool cannot leave anything for the next one: files in /tmp and
// the workdir, processes, a kill of everything it can see.
func TestWarmRunsAreIsolated(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			r := testRunner(t, be, 2)
			waitWarm(t, r)
			res := run(t, r, Spec{Profile: "python", Cmd: sh(`echo left > /tmp/left; echo left > left; (sleep 300 &); kill -9 -1; echo done`)})
			if res.ExitCode != 0 && res.ExitCode != 137 {
				t.Fatalf("first run: %+v", res)
			}
			waitWarm(t, r)
			res = run(t, r, Spec{Profile: "python", Cmd: sh(`ls -A /tmp /work | grep -v -e '^/' -e '^$' -e '^gocache$' || true; cat /proc/[0-9]*/comm 2>/dev/null | grep -c '^sleep$' || true`)})
			if res.ExitCode != 0 || strings.TrimSpace(res.Stdout) != "0" {
				t.Fatalf("the next warm run saw what the last one left: exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
			}
		})
	}
}
