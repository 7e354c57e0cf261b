package sandbox

import (
	"archive/tar"
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"log/slog"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"sync"
	"time"

	cerrdefs "github.com/containerd/errdefs"
	"github.com/moby/moby/api/types/jsonstream"
	"github.com/moby/moby/client"

	"github.com/autocoder/autocoder/internal/termsafe"
)

// ImageOptions say where an offline build finds Debian.
type ImageOptions struct {
	// Workdir caches the debootstrapped base rootfs as a tarball; empty
	// means DefaultImageWorkdir. deploy/build-base-images.sh shares it.
	Workdir string
	// Mirror is the Debian mirror debootstrap uses; empty means the one
	// the host's apt uses.
	Mirror string
	// Base names the base image; empty means BaseImage.
	Base string
}

// DefaultImageWorkdir is where the base rootfs is cached by default.
const DefaultImageWorkdir = "/var/cache/autocoder-images"

// debianSuite is the Debian release of the offline base, and of the
// official images the recipes name.
const debianSuite = "bookworm"

// imageAPI is what building images needs of the engine client.
type imageAPI interface {
	ImageInspect(ctx context.Context, image string, opts ...client.ImageInspectOption) (client.ImageInspectResult, error)
	ImageBuild(ctx context.Context, buildContext io.Reader, options client.ImageBuildOptions) (client.ImageBuildResult, error)
	ImageImport(ctx context.Context, source client.ImageImportSource, ref string, options client.ImageImportOptions) (client.ImageImportResult, error)
}

// imageBuilder builds the sandbox images that are missing, each once: a
// caller asking for an image another is building waits for that build.
type imageBuilder struct {
	cli  imageAPI
	log  *slog.Logger
	opts ImageOptions
	why  string // when a build happens, for the log: "first use"

	mu      sync.Mutex
	present map[string]bool        // images known to exist
	builds  map[string]*imageBuild // builds under way, by image
	baseMu  sync.Mutex             // one base import at a time
}

// imageBuild is one build under way; err is set before done is closed.
type imageBuild struct {
	done chan struct{}
	err  error
}

func newImageBuilder(cli imageAPI, log *slog.Logger, opts ImageOptions) *imageBuilder {
	if opts.Workdir == "" {
		opts.Workdir = DefaultImageWorkdir
	}
	if opts.Base == "" {
		opts.Base = BaseImage
	}
	return &imageBuilder{cli: cli, log: log, opts: opts, why: "first use", present: map[string]bool{}, builds: map[string]*imageBuild{}}
}

// markPresent records an image known to exist.
func (b *imageBuilder) markPresent(image string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.present[image] = true
}

// has reports an image known to exist.
func (b *imageBuilder) has(image string) bool {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.present[image]
}

// ensure returns once p's image exists, building it if it is missing. The
// build runs under bctx, so that a caller that gives up does not stop it
// for the others waiting; ctx bounds only this caller's wait.
func (b *imageBuilder) ensure(ctx, bctx context.Context, p Profile) error {
	b.mu.Lock()
	if b.present[p.Image] {
		b.mu.Unlock()
		return nil
	}
	bd, running := b.builds[p.Image]
	if !running {
		bd = &imageBuild{done: make(chan struct{})}
		b.builds[p.Image] = bd
		go b.run(bctx, p, bd)
	}
	b.mu.Unlock()
	select {
	case <-bd.done:
		return bd.err
	case <-ctx.Done():
		return fmt.Errorf("waiting for sandbox image %s: %w", p.Image, ctx.Err())
	}
}

// run builds p's image if it is missing and records the outcome. A failed
// build is forgotten, so a later run tries again.
func (b *imageBuilder) run(ctx context.Context, p Profile, bd *imageBuild) {
	defer close(bd.done)
	bd.err = b.ensureNow(ctx, p)
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.builds, p.Image)
	if bd.err == nil {
		b.present[p.Image] = true
	}
}

func (b *imageBuilder) ensureNow(ctx context.Context, p Profile) error {
	exists, err := b.exists(ctx, p.Image)
	if err != nil || exists {
		return err
	}
	start := time.Now()
	b.log.Info("building sandbox image "+p.Image+" ("+b.why+"; a few minutes)", "profile", p.Name)
	err = b.build(ctx, p)
	if err != nil {
		b.log.Error("sandbox image not built", "image", p.Image, "profile", p.Name, "err", err)
		return err
	}
	b.log.Info("sandbox image built", "image", p.Image, "profile", p.Name, "took", time.Since(start).Round(time.Second))
	return nil
}

// build tries the registry variant, then the offline one; an error names
// both failures and what a person can do.
func (b *imageBuilder) build(ctx context.Context, p Profile) error {
	var regErr error
	if p.Recipe.Base != "" {
		if regErr = b.buildRegistry(ctx, p); regErr == nil {
			return nil
		}
		b.log.Info("sandbox image: the registry build failed; building offline", "image", p.Image, "err", regErr)
	}
	offErr := b.buildOffline(ctx, p)
	if offErr == nil {
		return nil
	}
	return fmt.Errorf("%w: %s cannot be built here: registry build: %v; offline build: %v "+
		"(or docker build -t %s sandbox/images/%s, or use the bwrap sandbox: AUTOCODER_SANDBOX=bwrap)",
		ErrImageMissing, p.Image, orNone(regErr), offErr, p.Image, p.imageDir())
}

func orNone(err error) error {
	if err == nil {
		return errors.New("not tried")
	}
	return err
}

// buildRegistry builds from the recipe's official image; without a
// registry the pull fails at once.
func (b *imageBuilder) buildRegistry(ctx context.Context, p Profile) error {
	return b.dockerBuild(ctx, p.Image, buildContext(Dockerfile(p, false), nil), nil)
}

// buildOffline builds from BaseImage, making the base first if needed.
func (b *imageBuilder) buildOffline(ctx context.Context, p Profile) error {
	dirs, err := hostDirs(p)
	if err != nil {
		return err
	}
	if err := b.ensureBase(ctx); err != nil {
		return err
	}
	return b.dockerBuild(ctx, p.Image, buildContext(Dockerfile(p, true), dirs), map[string]*string{baseArg: &b.opts.Base})
}

// hostDir is a recipe's host directory or file found on this host; from
// is "" for an optional one the host lacks.
type hostDir struct {
	from string
	skip []string
}

func hostDirs(p Profile) ([]hostDir, error) {
	var dirs []hostDir
	for _, d := range p.Recipe.HostDirs {
		from := d.Find()
		if from == "" && !d.Optional {
			return nil, fmt.Errorf("the host has no directory for %s (%s)", d.To, p.Install)
		}
		dirs = append(dirs, hostDir{from: from, skip: d.Skip})
	}
	return dirs, nil
}

// buildContext streams a tar of the Dockerfile and the host directories,
// each under hostDirContext(i): a Go root is too big to hold in memory.
func buildContext(dockerfile string, dirs []hostDir) io.ReadCloser {
	pr, pw := io.Pipe()
	go func() {
		pw.CloseWithError(writeContext(pw, dockerfile, dirs))
	}()
	return pr
}

func writeContext(w io.Writer, dockerfile string, dirs []hostDir) error {
	tw := tar.NewWriter(w)
	if err := tw.WriteHeader(&tar.Header{Name: "Dockerfile", Mode: 0o644, Size: int64(len(dockerfile))}); err != nil {
		return fmt.Errorf("build context: %w", err)
	}
	if _, err := io.WriteString(tw, dockerfile); err != nil {
		return fmt.Errorf("build context: %w", err)
	}
	for i, d := range dirs {
		if err := addDir(tw, d, hostDirContext(i)); err != nil {
			return fmt.Errorf("build context: %s: %w", d.from, err)
		}
	}
	if err := tw.Close(); err != nil {
		return fmt.Errorf("build context: %w", err)
	}
	return nil
}

// addDir writes the directory d to the tar under prefix, leaving out its
// skipped subdirectories; symbolic links stay links. A file goes into
// prefix, and an absent optional one leaves prefix empty.
func addDir(tw *tar.Writer, d hostDir, prefix string) error {
	if d.from == "" {
		return tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: prefix + "/", Mode: 0o755})
	}
	if fi, err := os.Stat(d.from); err != nil {
		return err
	} else if !fi.IsDir() {
		name := filepath.Base(d.from)
		// The file itself, not a link that would dangle in the image.
		if d.from, err = filepath.EvalSymlinks(d.from); err != nil {
			return err
		}
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeDir, Name: prefix + "/", Mode: 0o755}); err != nil {
			return err
		}
		prefix = path.Join(prefix, name)
	}
	return filepath.WalkDir(d.from, func(p string, e fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(d.from, p)
		if err != nil {
			return err
		}
		rel = filepath.ToSlash(rel)
		if e.IsDir() && slices.Contains(d.skip, rel) {
			return filepath.SkipDir
		}
		info, err := e.Info()
		if err != nil {
			return err
		}
		link := ""
		if info.Mode()&fs.ModeSymlink != 0 {
			if link, err = os.Readlink(p); err != nil {
				return err
			}
		}
		hdr, err := tar.FileInfoHeader(info, link)
		if err != nil {
			return err
		}
		hdr.Name = path.Join(prefix, rel)
		hdr.Uid, hdr.Gid, hdr.Uname, hdr.Gname = 0, 0, "", ""
		if err := tw.WriteHeader(hdr); err != nil {
			return err
		}
		if !info.Mode().IsRegular() {
			return nil
		}
		f, err := os.Open(p)
		if err != nil {
			return err
		}
		defer f.Close()
		_, err = io.Copy(tw, f)
		return err
	})
}

// dockerBuild runs a build and reads its progress to the end: the daemon
// reports a failed step in the stream, not as the call's error.
func (b *imageBuilder) dockerBuild(ctx context.Context, image string, buildCtx io.ReadCloser, args map[string]*string) error {
	// Closing the context ends its writer if the daemon stops reading.
	defer buildCtx.Close()
	res, err := b.cli.ImageBuild(ctx, buildCtx, client.ImageBuildOptions{
		Tags: []string{image}, Remove: true, ForceRemove: true, BuildArgs: args,
	})
	if err != nil {
		return fmt.Errorf("image build: %w", err)
	}
	defer res.Body.Close()
	return readProgress(res.Body, "image build")
}

// readProgress reads a daemon's JSON progress stream and returns the error
// it reports, with the last lines of output before it.
func readProgress(r io.Reader, step string) error {
	var tail []string
	dec := json.NewDecoder(bufio.NewReader(r))
	for {
		var m jsonstream.Message
		if err := dec.Decode(&m); err == io.EOF {
			return nil
		} else if err != nil {
			return fmt.Errorf("%s: reading progress: %w", step, err)
		}
		if m.Error != nil {
			return fmt.Errorf("%s: %s: %s", step, progressError(m.Error.Message), strings.Join(tail, " | "))
		}
		if line := strings.TrimSpace(m.Stream); line != "" {
			tail = append(tail, termsafe.Clip(line, 240))
			if len(tail) > 5 {
				tail = tail[1:]
			}
		}
	}
}

// failedStepRe is the daemon's message of a failed RUN, which quotes the
// whole command: a recipe's script of many lines.
var failedStepRe = regexp.MustCompile(`(?s)^(The command ')(.*)(' returned [^']*)$`)

// progressError is a build's error message clipped to what a person
// reads: the failed command's start and its exit code; the output before
// it says why.
func progressError(msg string) string {
	if m := failedStepRe.FindStringSubmatch(msg); m != nil {
		return m[1] + termsafe.Clip(m[2], 120) + termsafe.Clip(m[3], 120)
	}
	return termsafe.Clip(msg, 400)
}

func (b *imageBuilder) exists(ctx context.Context, image string) (bool, error) {
	if _, err := b.cli.ImageInspect(ctx, image); err != nil {
		if cerrdefs.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("image inspect %s: %w", image, err)
	}
	return true, nil
}

// ensureBase imports BaseImage from the cached rootfs tarball, bootstrapping
// that first when it is missing.
func (b *imageBuilder) ensureBase(ctx context.Context) error {
	b.baseMu.Lock()
	defer b.baseMu.Unlock()
	if ok, err := b.exists(ctx, b.opts.Base); err != nil || ok {
		return err
	}
	tarball, err := b.baseRootfs(ctx)
	if err != nil {
		return err
	}
	f, err := os.Open(tarball)
	if err != nil {
		return fmt.Errorf("base image: %w", err)
	}
	defer f.Close()
	b.log.Info("sandbox image: importing the base", "image", b.opts.Base, "rootfs", tarball)
	res, err := b.cli.ImageImport(ctx, client.ImageImportSource{Source: f, SourceName: "-"}, b.opts.Base, client.ImageImportOptions{
		Changes: []string{"ENV PATH=" + imagePath, `CMD ["/bin/sh"]`},
	})
	if err != nil {
		return fmt.Errorf("base image: import: %w", err)
	}
	defer res.Close()
	return readProgress(res, "base image: import")
}

// baseRootfs returns the cached minbase rootfs tarball, making it with
// debootstrap when it is missing: that needs root and debootstrap.
func (b *imageBuilder) baseRootfs(ctx context.Context) (string, error) {
	tarball := filepath.Join(b.opts.Workdir, "base-"+debianSuite+".tar")
	if fi, err := os.Stat(tarball); err == nil && fi.Size() > 0 {
		return tarball, nil
	}
	if os.Geteuid() != 0 {
		return "", errors.New("the base rootfs is not cached and debootstrap needs root")
	}
	debootstrap, err := lookSbin("debootstrap")
	if err != nil {
		return "", errors.New("the base rootfs is not cached and debootstrap is not installed (apt-get install debootstrap)")
	}
	mirror, err := b.mirror()
	if err != nil {
		return "", err
	}
	if err := os.MkdirAll(b.opts.Workdir, 0o755); err != nil {
		return "", fmt.Errorf("base rootfs: %w", err)
	}
	dir, err := os.MkdirTemp(b.opts.Workdir, "base.")
	if err != nil {
		return "", fmt.Errorf("base rootfs: %w", err)
	}
	defer os.RemoveAll(dir)
	logPath := filepath.Join(b.opts.Workdir, "debootstrap.log")
	b.log.Info("sandbox image: debootstrap of the base (a few minutes)", "suite", debianSuite, "mirror", mirror, "log", logPath)
	if err := runLogged(ctx, logPath, debootstrap, "--variant=minbase", debianSuite, dir, mirror); err != nil {
		b.log.Error("sandbox image: debootstrap failed", "log", logPath, "tail", tailFile(logPath, 10))
		return "", fmt.Errorf("base rootfs: debootstrap: %w (see %s)", err, logPath)
	}
	if out, err := exec.CommandContext(ctx, "tar", "-C", dir, "--numeric-owner", "-cf", tarball+".tmp", ".").CombinedOutput(); err != nil {
		return "", fmt.Errorf("base rootfs: tar: %w: %s", err, bytes.TrimSpace(out))
	}
	if err := os.Rename(tarball+".tmp", tarball); err != nil {
		return "", fmt.Errorf("base rootfs: %w", err)
	}
	return tarball, nil
}

// sbinDirs hold the system programs, which a non-login root shell may not
// have on its PATH; debootstrap is one and runs others (chroot).
var sbinDirs = []string{"/usr/sbin", "/sbin"}

// lookSbin finds a program on PATH or in sbinDirs.
func lookSbin(name string) (string, error) {
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	for _, dir := range sbinDirs {
		p := filepath.Join(dir, name)
		if fi, err := os.Stat(p); err == nil && fi.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%s: %w", name, exec.ErrNotFound)
}

func runLogged(ctx context.Context, logPath, prog string, args ...string) error {
	logFile, err := os.Create(logPath)
	if err != nil {
		return err
	}
	defer logFile.Close()
	cmd := exec.CommandContext(ctx, prog, args...)
	// The host's own tools (debootstrap, dpkg, wget) with the system's
	// directories on PATH, sbin ones included, and the rest of the worker's
	// environment (a proxy's settings).
	cmd.Env = append(os.Environ(), "PATH="+strings.Join(append([]string{"/usr/local/bin", "/usr/bin", "/bin"}, sbinDirs...), ":"))
	cmd.Stdout, cmd.Stderr = logFile, logFile
	return cmd.Run()
}

// tailFile is the last n lines of a file, joined by " | ".
func tailFile(path string, n int) string {
	data, _ := os.ReadFile(path)
	lines := strings.Split(strings.TrimSpace(string(data)), "\n")
	return strings.Join(lines[max(0, len(lines)-n):], " | ")
}

// mirror is the configured Debian mirror, else the one the host's apt uses.
func (b *imageBuilder) mirror() (string, error) {
	if b.opts.Mirror != "" {
		return b.opts.Mirror, nil
	}
	if m := hostMirror(); m != "" {
		return m, nil
	}
	return "", errors.New("no Debian mirror: the host's apt sources name none; set one (DEBIAN_MIRROR for scripts/build-images.sh)")
}

// hostMirror reads the Debian mirror of the host's apt sources, as
// scripts/lib/debian.sh does: the deb822 file's first URI ending in
// "debian", else sources.list's first non-security "deb" line.
func hostMirror() string {
	if data, err := os.ReadFile("/etc/apt/sources.list.d/debian.sources"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "URIs:" && strings.HasSuffix(strings.TrimSuffix(f[1], "/"), "debian") {
				return f[1]
			}
		}
	}
	if data, err := os.ReadFile("/etc/apt/sources.list"); err == nil {
		for _, line := range strings.Split(string(data), "\n") {
			f := strings.Fields(line)
			if len(f) >= 2 && f[0] == "deb" && !strings.Contains(f[1], "security") {
				return f[1]
			}
		}
	}
	return ""
}

// BuildOptions select what BuildImages does.
type BuildOptions struct {
	ImageOptions
	// Force rebuilds images that exist.
	Force bool
	// Offline skips the registry variant.
	Offline bool
}

// BuildImages builds the images of the profiles, each image once however
// many profiles share it; with Force also those that exist. It stops at
// the first failure.
func BuildImages(ctx context.Context, ps []Profile, opts BuildOptions, log *slog.Logger) error {
	cli, err := newDockerClient(ctx)
	if err != nil {
		return fmt.Errorf("%w: %w", ErrUnavailable, err)
	}
	defer cli.Close()
	b := newImageBuilder(cli, log, opts.ImageOptions)
	b.why = "missing"
	seen := map[string]bool{}
	for _, p := range ps {
		if seen[p.Image] {
			continue
		}
		seen[p.Image] = true
		if opts.Offline {
			p.Recipe.Base = ""
		}
		if !opts.Force {
			if err := b.ensure(ctx, ctx, p); err != nil {
				return err
			}
			continue
		}
		log.Info("rebuilding sandbox image "+p.Image, "profile", p.Name)
		if err := b.build(ctx, p); err != nil {
			return err
		}
	}
	return nil
}
