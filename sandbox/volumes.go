package sandbox

import (
	"context"
	"fmt"
	"os"
	"strings"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/container"
	"github.com/moby/moby/api/types/mount"
	"github.com/moby/moby/client"
)

// Toolchain volumes hold a copy of an image's toolchain directories (the
// profile's ToolchainDirs) on the daemon's own filesystem, mounted
// read-only into every sandbox of that image. A container's root
// filesystem goes through the storage driver, which on some daemons is a
// FUSE overlay that makes every file a toolchain opens a round trip to a
// user-space process, and every new container a cold cache; a volume is a
// plain directory shared by all containers. Volumes are named by image id,
// so a rebuilt image gets new ones, and Reap removes those of images that
// are gone.
const (
	labelVolumeImage = "autocoder.sandbox.image" // the image id a toolchain volume copies
	// populateWait bounds the wait for another process filling the volumes.
	populateWait = 5 * time.Minute
)

// toolchainNames returns the volume of each toolchain dir of profile p in
// image id, and the name of the volume whose existence says they are
// complete.
func toolchainNames(p Profile, imageID string) (vols map[string]string, ready string) {
	id := strings.TrimPrefix(imageID, "sha256:")
	if len(id) > 12 {
		id = id[:12]
	}
	base := namePrefix + p.Name + "-" + id
	vols = map[string]string{}
	for _, dir := range p.ToolchainDirs {
		vols[dir] = base + "-" + strings.ReplaceAll(strings.Trim(dir, "/"), "/", "-")
	}
	return vols, base + "-ready"
}

// toolchainMounts makes sure the toolchain volumes of p's image exist and
// are complete, filling them if no other process is doing so, and returns
// the read-only mounts a sandbox uses.
func (d *dockerRunner) toolchainMounts(ctx context.Context, p Profile, image string) ([]mount.Mount, error) {
	if len(p.ToolchainDirs) == 0 {
		return nil, nil
	}
	ins, err := d.cli.ImageInspect(ctx, image)
	if err != nil {
		return nil, fmt.Errorf("image inspect %s: %w", image, err)
	}
	vols, ready := toolchainNames(p, ins.ID)
	ctx, cancel := context.WithTimeout(ctx, populateWait)
	defer cancel()
	for {
		if _, err := d.cli.VolumeInspect(ctx, ready, client.VolumeInspectOptions{}); err == nil {
			break
		} else if !cerrdefs.IsNotFound(err) {
			return nil, fmt.Errorf("volume inspect %s: %w", ready, err)
		}
		filled, err := d.populate(ctx, p, image, ins.ID, vols, ready)
		if err != nil {
			return nil, err
		}
		if filled {
			break
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("toolchain volumes for %s: waiting for another process to fill them: %w", image, ctx.Err())
		case <-time.After(250 * time.Millisecond):
		}
	}
	var mounts []mount.Mount
	for _, dir := range p.ToolchainDirs {
		mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: vols[dir], Target: dir, ReadOnly: true,
			VolumeOptions: &mount.VolumeOptions{NoCopy: true}})
	}
	return mounts, nil
}

// populate fills the volumes unless another process holds the lock, a
// container name only one process can create. It reports whether it
// filled them. The daemon copies an image's files into an empty volume
// when a container that mounts it is created, so the filler container
// never runs.
func (d *dockerRunner) populate(ctx context.Context, p Profile, image, imageID string, vols map[string]string, ready string) (bool, error) {
	lockName := strings.TrimSuffix(ready, "-ready") + "-filling"
	labels := map[string]string{labelSandbox: "1", labelBackend: "docker", labelProfile: p.Name, labelOwner: d.owner, labelRunner: d.id}
	lock, err := d.cli.ContainerCreate(ctx, client.ContainerCreateOptions{Name: lockName,
		Config:     &container.Config{Image: image, Entrypoint: []string{"/bin/true"}, Labels: labels, NetworkDisabled: true},
		HostConfig: &container.HostConfig{NetworkMode: "none"}})
	if cerrdefs.IsConflict(err) {
		return false, d.breakStaleLock(ctx, lockName)
	}
	if err != nil {
		// A create the daemon finished after ctx ended (the runner
		// closing) leaves the container without telling its id.
		d.remove(lockName)
		return false, fmt.Errorf("toolchain volumes: lock: %w", err)
	}
	defer d.remove(lock.ID)
	start := time.Now()
	// A filler that died half-way leaves a volume that is not empty, which
	// the daemon would not fill again: start from none. Its containers go
	// first: the daemon keeps a volume that a container mounts, running or
	// not, and a process that died while filling leaves the filler behind.
	// A container that cannot be reaped fails the removal below if it holds
	// a volume; one that holds none is no reason to stop.
	if _, err := reapContainers(ctx, d.cli, d.log); err != nil {
		d.log.Warn("sandbox: reaping leaked containers before a toolchain fill failed", "err", err)
	}
	for _, v := range vols {
		if _, err := d.cli.VolumeRemove(ctx, v, client.VolumeRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			return false, fmt.Errorf("toolchain volumes: remove stale %s: %w", v, err)
		}
	}
	volLabels := map[string]string{labelSandbox: "1", labelVolumeImage: imageID}
	var mounts []mount.Mount
	for dir, v := range vols {
		if _, err := d.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: v, Labels: volLabels}); err != nil {
			return false, fmt.Errorf("toolchain volumes: create %s: %w", v, err)
		}
		mounts = append(mounts, mount.Mount{Type: mount.TypeVolume, Source: v, Target: dir})
	}
	// The daemon fills the volumes while it creates the filler, which can
	// take seconds: a create given up half-way would leave the filler
	// behind once the daemon finishes it, so the create is not cancelled
	// when the runner closes (Close waits for it).
	fillerName := strings.TrimSuffix(ready, "-ready") + "-filler"
	cctx, cancelCreate := context.WithTimeout(context.WithoutCancel(ctx), populateWait)
	defer cancelCreate()
	filler, err := d.cli.ContainerCreate(cctx, client.ContainerCreateOptions{Name: fillerName,
		Config:     &container.Config{Image: image, Entrypoint: []string{"/bin/true"}, Labels: labels, NetworkDisabled: true},
		HostConfig: &container.HostConfig{NetworkMode: "none", Mounts: mounts}})
	if err != nil {
		d.remove(fillerName)
		return false, fmt.Errorf("toolchain volumes: fill: %w", err)
	}
	d.remove(filler.ID)
	if _, err := d.cli.VolumeCreate(ctx, client.VolumeCreateOptions{Name: ready, Labels: volLabels}); err != nil {
		return false, fmt.Errorf("toolchain volumes: mark complete: %w", err)
	}
	d.log.Info("sandbox: toolchain volumes filled", "profile", p.Name, "image", image, "took", time.Since(start).Round(time.Millisecond))
	return true, nil
}

// breakStaleLock removes a fill lock whose owner process is gone.
func (d *dockerRunner) breakStaleLock(ctx context.Context, name string) error {
	ins, err := d.cli.ContainerInspect(ctx, name, client.ContainerInspectOptions{})
	if cerrdefs.IsNotFound(err) {
		return nil
	}
	if err != nil {
		return fmt.Errorf("toolchain volumes: inspect lock: %w", err)
	}
	c := ins.Container
	created, _ := time.Parse(time.RFC3339Nano, c.Created)
	host, _ := os.Hostname()
	if c.Config != nil && leaked(c.Config.Labels[labelOwner], host, created) {
		d.log.Warn("sandbox: removing the toolchain fill lock of a dead process", "lock", name)
		d.remove(c.ID)
	}
	return nil
}

// reapVolumes removes toolchain volumes whose image is gone.
func reapVolumes(ctx context.Context, cli dockerAPI) (int, error) {
	list, err := cli.VolumeList(ctx, client.VolumeListOptions{Filters: make(client.Filters).Add("label", labelVolumeImage)})
	if err != nil {
		return 0, fmt.Errorf("volume list: %w", err)
	}
	n := 0
	for _, v := range list.Items {
		_, err := cli.ImageInspect(ctx, v.Labels[labelVolumeImage])
		if err == nil || !cerrdefs.IsNotFound(err) {
			continue
		}
		if _, err := cli.VolumeRemove(ctx, v.Name, client.VolumeRemoveOptions{Force: true}); err != nil && !cerrdefs.IsNotFound(err) {
			if cerrdefs.IsConflict(err) {
				continue // still mounted by a container of the old image
			}
			return n, fmt.Errorf("volume remove %s: %w", v.Name, err)
		}
		n++
	}
	return n, nil
}
