package sandbox

import (
	"context"
	"maps"
	"os"
	"slices"
	"strings"
	"testing"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
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
	r, err := New(ctx, Config{Backend: "docker", PoolSize: 2, Slots: 2, Profiles: testProfiles("python"), Warm: []string{"python"}})
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
		for _, pl := range d.allPools() {
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
		p := mustProfile(t, profile)
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

// TestToolchainVolumesAfterACrash starts a runner where a dead process left
// a fill half done: the toolchain volumes of an image, not marked complete,
// still mounted by its leaked filler container. The fill must reap the
// container before it replaces the volumes, which the daemon keeps while
// a container mounts them ("volume is in use"); else sandboxes fall back to
// the image's own files.
func TestToolchainVolumesAfterACrash(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cli, err := newDockerClient(ctx)
	if err != nil {
		testenv.RequireService(t, "docker", err)
	}
	defer cli.Close()
	// An image of the test's own, so that its volumes are too: those of
	// the real images serve other runners on this host.
	py := mustProfile(t, "python")
	base, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{Config: &container.Config{Image: py.Image, Entrypoint: []string{"/bin/true"}}})
	if err != nil {
		testenv.RequireService(t, "the python sandbox image", err)
	}
	image := "autocoder-test/crashed-fill:" + randomHex(4)
	committed, err := cli.ContainerCommit(ctx, base.ID, client.ContainerCommitOptions{Reference: image})
	if _, rerr := cli.ContainerRemove(ctx, base.ID, client.ContainerRemoveOptions{Force: true}); rerr != nil {
		t.Error(rerr)
	}
	if err != nil {
		t.Fatal(err)
	}
	vols, ready := toolchainNames(py, committed.ID)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		defer cancel()
		if _, err := cli.ImageRemove(ctx, image, client.ImageRemoveOptions{Force: true, PruneChildren: true}); err != nil {
			t.Error(err)
		}
		for _, v := range append(slices.Collect(maps.Values(vols)), ready) {
			if _, err := cli.VolumeRemove(ctx, v, client.VolumeRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
				t.Error(err)
			}
		}
	})

	// What the dead process left: volumes filled by its filler, which it
	// had no time to remove, and no mark that they are complete. The stale
	// label tells them from the volumes a new fill makes.
	const staleLabel = "autocoder.test.stale"
	var mounts []mount.Mount
	for dir, v := range vols {
		if _, err := cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: v,
			Labels: map[string]string{labelSandbox: "1", labelVolumeImage: committed.ID, staleLabel: "1"}}); err != nil {
			t.Fatal(err)
		}
		mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: v, Target: dir})
	}
	host, _ := os.Hostname()
	dead := host + "/4194305/1" // a pid above the kernel's limit names no process
	filler, err := cli.ContainerCreate(ctx, client.ContainerCreateOptions{
		Config: &container.Config{Image: image, Entrypoint: []string{"/bin/true"}, NetworkDisabled: true,
			Labels: map[string]string{labelSandbox: "1", labelBackend: "docker", labelProfile: "python", labelOwner: dead}},
		HostConfig: &container.HostConfig{NetworkMode: "none", Mounts: mounts}})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if _, err := cli.ContainerRemove(context.Background(), filler.ID, client.ContainerRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			t.Error(err)
		}
	})

	// A fresh start, its python profile on the test's image; no run of
	// another runner of this process uses the profile meanwhile.
	t.Setenv("AUTOCODER_IMAGE_PYTHON", image)
	r, err := New(ctx, Config{Backend: "docker", PoolSize: -1, Profiles: testProfiles("python"), Warm: []string{"python"}})
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	d := inner(r).(*dockerRunner)
	if got := toolchainMounts(t, d, "python"); len(got) != len(py.ToolchainDirs) {
		t.Fatalf("%d toolchain mounts after a crashed fill, want %d", len(got), len(py.ToolchainDirs))
	}
	if _, err := cli.ContainerInspect(ctx, filler.ID, client.ContainerInspectOptions{}); !cerrdefs.IsNotFound(err) {
		t.Errorf("the dead process's filler is still there: %v", err)
	}
	for _, v := range vols {
		ins, err := cli.VolumeInspect(ctx, v, client.VolumeInspectOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if ins.Volume.Labels[staleLabel] != "" {
			t.Errorf("volume %s is the stale one", v)
		}
	}
	res := run(t, r, Spec{Profile: "python", Cmd: sh(`awk '$5 == "/usr/lib" { print $6 }' /proc/self/mountinfo; python3 -c 'print("python runs")'`)})
	if res.ExitCode != 0 || !strings.HasPrefix(res.Stdout, "ro,") || !strings.Contains(res.Stdout, "python runs") {
		t.Fatalf("want python from the read-only toolchain volumes: exit %d %q %q", res.ExitCode, res.Stdout, res.Stderr)
	}
}

// toolchainMounts waits for the fill of a profile's toolchain volumes,
// which starts in the background, and returns their mounts.
func toolchainMounts(t *testing.T, d *dockerRunner, profile string) []mount.Mount {
	t.Helper()
	d.toolsMu.Lock()
	tc := d.tools[mustProfile(t, profile).Image]
	d.toolsMu.Unlock()
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
