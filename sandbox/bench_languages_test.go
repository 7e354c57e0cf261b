package sandbox

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/testenv"
	"github.com/autocoder/autocoder/internal/workspace"
)

// BenchmarkLanguages runs every language's example project (examples/<name>)
// with its default test command in a warm sandbox of each backend, and
// each time, just before or after it (each goes first in turn), bare on
// the host: so both see the same load. It prints p50 and p95 of each, the
// warm p50 over the bare one, and the median of the pairs' ratios. The
// examples' tests fail by design: every run of a language must end with
// the same exit code.
//
//	go test ./sandbox -run '^$' -bench Languages -benchtime 5x -timeout 30m
func BenchmarkLanguages(b *testing.B) {
	var rows benchRows
	exits := map[string]int{} // each language's exit code, from its first run
	sameExit := func(b *testing.B, profile string, code int) {
		b.Helper()
		if want, ok := exits[profile]; ok && want != code {
			b.Fatalf("%s: exit code %d, another run ended with %d", profile, code, want)
		}
		exits[profile] = code
	}
	bare := map[string]map[string][]time.Duration{} // by language, by backend
	for _, p := range testProfiles() {
		files := exampleFiles(b, p.Name)
		bare[p.Name] = map[string][]time.Duration{}
		for _, be := range backends {
			b.Run(p.Name+"/"+be+"-warm", func(b *testing.B) {
				if err := runHostCheck(context.Background(), p); err != nil {
					testenv.RequireService(b, "the "+p.Name+" toolchain on the host", err)
				}
				seed := goCacheSeed(b, p)
				r := testRunner(b, be, 2)
				spec := Spec{Profile: p.Name, Files: files}
				warmUp(b, r, spec)
				var bareRuns, warmRuns []time.Duration
				ratios := make([]float64, b.N)
				for i := range b.N {
					for k := range 2 {
						if (k+i)%2 == 0 {
							took, code := bareRun(b, p, files, seed)
							sameExit(b, p.Name, code)
							bareRuns = append(bareRuns, took)
							continue
						}
						waitWarm(b, r) // a refill under way would compete for the CPU
						start := time.Now()
						res := run(b, r, spec)
						warmRuns = append(warmRuns, time.Since(start))
						sameExit(b, p.Name, res.ExitCode)
					}
					ratios[i] = float64(warmRuns[i]) / float64(bareRuns[i])
				}
				bare[p.Name][be] = bareRuns
				var all []time.Duration
				for _, be := range backends {
					all = append(all, bare[p.Name][be]...)
				}
				rows.record(benchRow{name: p.Name + "/bare", p50: pct(all, 0.5), p95: pct(all, 0.95)})
				row := report(b, p.Name+"/"+be+"-warm", warmRuns)
				row.paired = pct(ratios, 0.5)
				b.ReportMetric(row.paired, "x-bare-paired")
				rows.record(row)
			})
		}
	}
	rows.print(b, "paired")
	var codes []string
	for _, p := range testProfiles() {
		if code, ok := exits[p.Name]; ok {
			codes = append(codes, fmt.Sprintf("%s %d", p.Name, code))
		}
	}
	line := fmt.Sprintf("exit codes, the same in every mode: %s\n", strings.Join(codes, ", "))
	b.Log(line)
	fmt.Print(line)
}

// exampleFiles are the files of examples/<profile> as a task uploads them.
func exampleFiles(tb testing.TB, profile string) []workspace.File {
	tb.Helper()
	files, _, err := workspace.LoadDir(filepath.Join(testenv.RepoRoot(tb), "examples", profile), workspace.LoadOptions{})
	if err != nil {
		tb.Fatalf("the %s example: %v", profile, err)
	}
	if len(files) == 0 {
		tb.Fatalf("the %s example has no files", profile)
	}
	return files
}

// warmUp runs the spec once, unmeasured, so that the profile's warm-ups
// start (its pool, the docker toolchain volumes, the bwrap Go cache); a
// missing image or host toolchain skips the benchmark, or fails it in CI.
func warmUp(b *testing.B, r Runner, spec Spec) {
	b.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	_, err := r.Run(ctx, spec)
	if errors.Is(err, ErrImageMissing) || errors.Is(err, ErrUnavailable) {
		testenv.RequireService(b, fmt.Sprintf("the %s sandbox on %s", spec.Profile, r.Name()), err)
	}
	if err != nil {
		b.Fatal(err)
	}
}

// goCacheSeed is, for a profile with a pre-built Go cache, the one the
// bwrap backend builds and seeds its sandboxes with; "" for the others.
func goCacheSeed(b *testing.B, p Profile) string {
	if p.GoCache == "" {
		return ""
	}
	c := inner(testRunner(b, "bwrap", -1)).(*bwrapRunner).startGoCache(p)
	if c == nil {
		b.Fatalf("no go toolchain for the %s cache", p.Name)
	}
	if err := c.wait(context.Background()); err != nil {
		b.Fatal(err)
	}
	return c.dir
}

// bareScript runs in a mount namespace of its own, where a fresh tmpfs
// becomes /tmp, so that the paths a run writes to (HOME, TMPDIR, a
// language's fixed build directory) are the run's alone and in memory, as
// in a sandbox. The tmpfs is mounted on $2 and the project ($1/work)
// copied into it, the Go cache seed ($3, if any) bound in, and then it is
// moved onto /tmp: the project is /tmp/work, and GOCACHE a tree of links
// to the seed, as the sandbox's entry script makes it. Then the time is
// written to fd 3 and the command (the rest) runs: what comes before is
// the preparation a warm sandbox has done before its run. A failure to
// prepare exits with bareSetupFailed.
const bareScript = `src=$1 fs=$2 seed=$3
shift 3
{
	mount -t tmpfs -o mode=1777 tmpfs "$fs" && cp -a "$src/work" "$fs/work" &&
	if [ -n "$seed" ]; then mkdir "$fs/.seed" && mount --bind "$seed" "$fs/.seed"; fi &&
	mount --move "$fs" /tmp && cd /tmp/work &&
	if [ -n "$seed" ]; then cp -rs /tmp/.seed "$GOCACHE" && rm -f "$GOCACHE/trim.txt" && date +%s > "$GOCACHE/trim.txt"; fi
} || exit 125
date +%s%N >&3
exec "$@" 3>&-`

const bareSetupFailed = 125

// bareRun runs the profile's default test command over files as a plain
// host process, with the sandbox's environment and a private /tmp (see
// bareScript), and returns how long the command took and its exit code.
// It needs root, for the mounts.
func bareRun(b *testing.B, p Profile, files []workspace.File, seed string) (time.Duration, int) {
	b.Helper()
	dir := b.TempDir()
	if err := workspace.WriteDir(filepath.Join(dir, "work"), files); err != nil {
		b.Fatal(err)
	}
	fs := filepath.Join(dir, "tmpfs")
	if err := os.Mkdir(fs, 0o755); err != nil {
		b.Fatal(err)
	}
	stamp, err := os.Create(filepath.Join(dir, "start"))
	if err != nil {
		b.Fatal(err)
	}
	defer stamp.Close()
	cmd := exec.Command("unshare", append([]string{"--mount", "--propagation", "private", "sh", "-c", bareScript, "bare", dir, fs, seed}, p.TestCmd...)...)
	cmd.Env = p.environ(p.hostPATH())
	cmd.ExtraFiles = []*os.File{stamp}
	out, err := cmd.CombinedOutput()
	end := time.Now()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		b.Fatalf("bare: %v %s", err, out)
	}
	code := cmd.ProcessState.ExitCode()
	if code == bareSetupFailed {
		b.Fatalf("bare: no private /tmp: %s", out)
	}
	started, err := os.ReadFile(stamp.Name())
	ns, perr := strconv.ParseInt(strings.TrimSpace(string(started)), 10, 64)
	if err != nil || perr != nil {
		b.Fatalf("bare: no start time: %v %v %q", err, perr, started)
	}
	return end.Sub(time.Unix(0, ns)), code
}
