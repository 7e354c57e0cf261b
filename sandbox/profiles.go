package sandbox

import (
	"errors"
	"fmt"
	"os"
	"slices"
	"sort"
	"strings"

	"github.com/autocoder/autocoder/internal/lang"
)

// ErrUnknownProfile reports a profile name that is not defined.
var ErrUnknownProfile = errors.New("unknown sandbox profile")

// Profile is how one language's code runs: what its plug-in says of the
// sandbox (lang.Sandbox), with its name and default command.
type Profile struct {
	Name string
	// TestCmd is the default command, run in the workdir.
	TestCmd []string
	lang.Sandbox
	// recipeImage is the language's own name of the image, when
	// AUTOCODER_IMAGE_<NAME> renamed it.
	recipeImage string
}

// ProfileOf is a language's profile; the image can be overridden with
// AUTOCODER_IMAGE_<NAME> (AUTOCODER_IMAGE_PYTHON).
func ProfileOf(l lang.Language) Profile {
	p := Profile{Name: l.Name, TestCmd: l.Tests.Command, Sandbox: l.Sandbox, recipeImage: l.Sandbox.Image}
	p.Image = envOr("AUTOCODER_IMAGE_"+strings.ToUpper(l.Name), p.Image)
	return p
}

// ProfilesOf are the languages' profiles.
func ProfilesOf(ls []lang.Language) []Profile {
	var ps []Profile
	for _, l := range ls {
		ps = append(ps, ProfileOf(l))
	}
	return ps
}

// profileSet finds profiles by name.
type profileSet map[string]Profile

func newProfileSet(ps []Profile) profileSet {
	s := profileSet{}
	for _, p := range ps {
		s[p.Name] = p
	}
	return s
}

func (s profileSet) lookup(name string) (Profile, error) {
	p, ok := s[name]
	if !ok {
		return Profile{}, fmt.Errorf("%w: %q (have %s)", ErrUnknownProfile, name, strings.Join(s.names(), ", "))
	}
	return p, nil
}

func (s profileSet) names() []string {
	var names []string
	for n := range s {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}

// prewarmDir is where Prewarm works; it is removed before the run.
const prewarmDir = tmpDir + "/.prewarm"

const (
	sandboxUID = 65534
	workDir    = "/work"
	tmpDir     = "/tmp"
)

// imagePath is the PATH inside a container; the bwrap backend leaves out
// /usr/local so that the host's own tools there are not picked up, and
// puts the profile's HostBin first.
const (
	imagePath = "/usr/local/go/bin:/usr/local/cargo/bin:/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin"
	hostPath  = "/usr/bin:/bin:/usr/sbin:/sbin"
)

// hostPATH is a bwrap run's PATH: the profile's host toolchain first.
func (p Profile) hostPATH() string {
	return strings.Join(append(slices.Clone(p.hostBin()), hostPath), ":")
}

// hostPaths are the host directories a bwrap run mounts for the profile.
func (p Profile) hostPaths() []string {
	if p.HostPaths == nil {
		return nil
	}
	return p.HostPaths()
}

// hostBin are the host directories put first on a bwrap run's PATH.
func (p Profile) hostBin() []string {
	if p.HostBin == nil {
		return nil
	}
	return p.HostBin()
}

// environ builds the complete environment of a run: the profile's variables
// plus PATH, HOME and temp dirs.
func (p Profile) environ(path string) []string {
	env := map[string]string{
		"PATH":   path,
		"HOME":   tmpDir,
		"TMPDIR": tmpDir,
		"LANG":   "C.UTF-8",
		"USER":   "nobody",
	}
	for k, v := range p.Env {
		env[k] = v
	}
	out := make([]string, 0, len(env))
	for k, v := range env {
		out = append(out, k+"="+v)
	}
	sort.Strings(out)
	return out
}

func envOr(key, def string) string {
	if v := os.Getenv(key); v != "" {
		return v
	}
	return def
}
