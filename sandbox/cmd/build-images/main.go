// Command build-images builds the sandbox images of autocoder's languages
// offline, from a Debian minbase every image shares; scripts/build-images.sh
// runs it as root.
//
//	build-images [--force] [--registry] [name...]
//
// A name is an image's folder under sandbox/images ("python", "node") or a
// language's name; none means all. Images that exist are kept unless
// --force. AUTOCODER_IMAGE_<LANGUAGE> renames a language's image,
// AUTOCODER_IMAGE_BASE the shared base image, AUTOCODER_IMAGE_WORKDIR
// where the base rootfs is cached, and
// DEBIAN_MIRROR the mirror debootstrap uses (default: the host's).
package main

import (
	"context"
	"flag"
	"fmt"
	"log/slog"
	"os"
	"os/signal"
	"slices"
	"syscall"

	"github.com/autocoder/autocoder/internal/config"
	"github.com/autocoder/autocoder/internal/lang/languages"
	"github.com/autocoder/autocoder/sandbox"
)

func main() {
	force := flag.Bool("force", false, "rebuild images that exist")
	registry := flag.Bool("registry", false, "try the official base images of a registry first")
	flag.Parse()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	log := slog.New(slog.NewTextHandler(os.Stderr, nil))
	ps, err := selectProfiles(sandbox.ProfilesOf(languages.All()), flag.Args())
	var s *config.Config
	if err == nil {
		s, err = config.Load(config.Options{Getenv: config.Environ})
	}
	if err == nil {
		err = sandbox.BuildImages(ctx, ps, sandbox.BuildOptions{
			ImageOptions: sandbox.ImageOptions{Workdir: s.String("sandbox.image_workdir"), Mirror: s.String("sandbox.debian_mirror"),
				Base: s.String("sandbox.image_base")},
			Force:   *force,
			Offline: !*registry,
		}, log)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "build-images:", err)
		os.Exit(1)
	}
}

// selectProfiles keeps the profiles named by their image's folder or
// their own name; no names keeps all.
func selectProfiles(all []sandbox.Profile, names []string) ([]sandbox.Profile, error) {
	if len(names) == 0 {
		return all, nil
	}
	var ps []sandbox.Profile
	for _, n := range names {
		i := slices.IndexFunc(all, func(p sandbox.Profile) bool { return p.Name == n || sandbox.ImageDir(p.Image) == n })
		if i < 0 {
			return nil, fmt.Errorf("unknown image %q", n)
		}
		ps = append(ps, all[i])
	}
	return ps, nil
}
