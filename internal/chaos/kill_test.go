package chaos

import (
	"context"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"go.temporal.io/sdk/client"
	"go.temporal.io/server/temporaltest"

	"github.com/autocoder/autocoder/internal/store"
	"github.com/autocoder/autocoder/internal/testenv"
)

const (
	chaosTasks = 20
	// memoGrace is how long after a model answer the worker may still be
	// writing its memo: a kill within it may cost the call again.
	memoGrace = 2 * time.Second
	// recoveryBound is the longest wait for progress after a restart the
	// product's own settings allow: the heartbeat timeout (5 s in
	// workflows/codingtask.go), the first retry interval, and slack for a
	// loaded machine.
	recoveryBound = 5*time.Second + time.Second + 15*time.Second
	// recoveryTarget is the wait we want after a restart.
	recoveryTarget = 10 * time.Second
)

// kill is one SIGKILL of the worker and the restart after it.
type kill struct {
	Target   string              // activity type the kill was aimed at
	At       time.Time           // when SIGKILL was sent
	Restart  time.Time           // when the next worker was started
	InFlight map[string][]string // task id -> activity types running at the kill
}

// TestChaosKillWorker runs twenty tasks, each with a failed first attempt
// and a retry that hears of the failure, on a worker process that is
// killed with SIGKILL during planning, model turns (first ones and those
// answering a failed check) and checks (validation and test execution),
// and restarted each time. Every task must finish with the right files, a model
// prompt may only be paid for again when a kill cut its call, and no
// sandbox container may outlive the final graceful stop. The time from a
// restart to the next progress of each interrupted task is measured.
func TestChaosKillWorker(t *testing.T) {
	requireDocker(t)
	bin := testenv.Binary(t)
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()

	seed := time.Now().UnixNano()
	if s := os.Getenv("AUTOCODER_CHAOS_SEED"); s != "" {
		v, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("AUTOCODER_CHAOS_SEED: %v", err)
		}
		seed = v
	}
	t.Logf("seed %d (rerun with AUTOCODER_CHAOS_SEED=%d)", seed, seed)
	rng := rand.New(rand.NewPCG(uint64(seed), 0))

	ts := temporaltest.NewServer(temporaltest.WithT(t))
	c := ts.GetDefaultClient()
	// Model calls take about a second so kills land mid-call.
	model := newModelServer(t, taskScript(true, delays{plan: 800 * time.Millisecond, generate: time.Second, retry: time.Second}))
	dataDir := t.TempDir()
	workers := testenv.NewFleet(t, bin, workerEnv(ts.GetFrontendHostPort(), ts.GetDefaultNamespace(), dataDir, model.URL()),
		"--sandbox-slots", "2", "--sandbox-pool", "1")
	workers.Start()

	// Tasks start staggered so that at any moment they are in different phases.
	gaps := make([]time.Duration, chaosTasks)
	for i := range gaps {
		gaps[i] = 400*time.Millisecond + jitter(rng, 800*time.Millisecond)
	}
	var (
		mu    sync.Mutex
		ids   []string
		start = make(chan error, 1)
	)
	go func() {
		for n := range chaosTasks {
			id, err := startTask(ctx, c, "chaos-kill", n, 4, false)
			if err != nil {
				start <- err
				return
			}
			mu.Lock()
			ids = append(ids, id)
			mu.Unlock()
			time.Sleep(gaps[n])
		}
		start <- nil
	}()
	startedIDs := func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(ids)
	}

	// The first kill hits planning; the others hit the remaining kinds of
	// work in a seeded order, then one more at random. Check (validation,
	// then the tests) is the longest, so it is hit twice, and so is
	// ModelTurn, the model's turn of an attempt, first or after a failure.
	targets := []string{"ModelTurn", "ModelTurn", "Check", "Check"}
	rng.Shuffle(len(targets), func(i, j int) { targets[i], targets[j] = targets[j], targets[i] })
	targets = append([]string{"Plan"}, append(targets, targets[rng.IntN(len(targets))])...)

	var kills []kill
	for _, target := range targets {
		k, ok := killDuring(ctx, t, c, workers, startedIDs, target, rng)
		if !ok {
			t.Logf("no %s activity ran within the wait; kill skipped", target)
			continue
		}
		kills = append(kills, k)
		time.Sleep(2*time.Second + jitter(rng, 3*time.Second))
	}
	if err := <-start; err != nil {
		t.Fatal(err)
	}
	if len(kills) < 4 {
		t.Fatalf("only %d kills landed on running activities, want at least 4", len(kills))
	}

	results := map[string]string{} // task id -> final snapshot
	for _, id := range startedIDs() {
		res, err := waitDone(ctx, c, id)
		if err != nil {
			t.Fatalf("%v", err)
		}
		if res.Iterations != 2 {
			t.Errorf("task %s took %d iterations, want 2 (one failure, one fix)", id, res.Iterations)
		}
		results[id] = res.SnapshotID
	}
	finished := time.Now()

	// Progress after each restart, read from the histories.
	histories := map[string]taskHistory{}
	for id := range results {
		h, err := loadHistory(ctx, c, id)
		if err != nil {
			t.Fatal(err)
		}
		histories[id] = h
	}
	reportRecovery(t, kills, histories)

	last := workers.Current()
	if err := last.Stop(time.Minute); err != nil {
		t.Errorf("graceful stop: %v", err)
	}
	leaked, err := leakedContainers(ctx, workers.Owners())
	if err != nil {
		t.Fatal(err)
	}
	if len(leaked) > 0 {
		t.Errorf("%d sandbox containers left after the final stop: %v", len(leaked), leaked)
	}

	st, err := store.OpenSQLite(ctx, filepath.Join(dataDir, "autocoder.db"))
	if err != nil {
		t.Fatalf("open store: %v", err)
	}
	defer st.Close()
	for id, snap := range results {
		var n int
		if _, err := fmt.Sscanf(id, "chaos-kill-%d", &n); err != nil {
			t.Fatalf("task id %s: %v", id, err)
		}
		if err := checkSnapshot(ctx, st, n, snap); err != nil {
			t.Error(err)
		}
	}

	checkRepeats(t, model.Calls(), kills)
	t.Logf("%d tasks, %d kills, %d model calls; all done %s after the first start",
		len(results), len(kills), len(model.Calls()), finished.Sub(workers.Workers()[0].Started).Round(time.Second))
}

// killDuring waits until some task runs an activity of type target on the
// current worker, lets it run a random moment longer, kills the worker and
// starts the next one.
func killDuring(ctx context.Context, t *testing.T, c client.Client, workers *testenv.Fleet, ids func() []string, target string, rng *rand.Rand) (kill, bool) {
	t.Helper()
	deadline := time.Now().Add(40 * time.Second)
	for time.Now().Before(deadline) && ctx.Err() == nil {
		w := workers.Current()
		inFlight, hit := map[string][]string{}, false
		for _, id := range ids() {
			types, err := pendingStarted(ctx, c, id, w.Started)
			if err != nil {
				t.Fatal(err)
			}
			if len(types) > 0 {
				inFlight[id] = types
				hit = hit || slices.Contains(types, target)
			}
		}
		if !hit {
			time.Sleep(150 * time.Millisecond)
			continue
		}
		// The model answers after about a second, so a jitter under that
		// lands mid-call or just after it, during parsing and store writes.
		time.Sleep(jitter(rng, 900*time.Millisecond))
		k := kill{Target: target, At: time.Now(), InFlight: inFlight}
		if err := w.Kill(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(jitter(rng, 700*time.Millisecond))
		k.Restart = time.Now()
		workers.Start()
		t.Logf("kill %s: worker %d killed with %d tasks busy (%v); restarted after %s",
			target, w.Pid(), len(inFlight), inFlight, k.Restart.Sub(k.At).Round(time.Millisecond))
		return k, true
	}
	return kill{}, false
}

// reportRecovery measures, for each kill, the time from the restart to the
// first activity completion of any task (the new worker is working), and
// for each task a kill interrupted, to that task's next completion. Only the
// first is bounded by the timeouts: with many tasks interrupted at once the
// others also queue for sandbox slots, which is reported, not failed.
func reportRecovery(t *testing.T, kills []kill, histories map[string]taskHistory) {
	t.Helper()
	var waits, bounded, firsts []time.Duration
	retried := map[bool][]time.Duration{} // by whether the activity is a sandbox run
	superseded := 0
	for i, k := range kills {
		var firstAny time.Duration = -1
		for _, h := range histories {
			if at, ok := h.completionAfter(k.Restart); ok && (firstAny < 0 || at.Sub(k.Restart) < firstAny) {
				firstAny = at.Sub(k.Restart)
			}
		}
		if firstAny >= 0 && (i+1 == len(kills) || k.Restart.Add(firstAny).Before(kills[i+1].At)) {
			firsts = append(firsts, firstAny)
		}
		var mine []time.Duration
		for id := range k.InFlight {
			// The cut activity: scheduled before the kill, its completing
			// attempt started after the restart.
			for _, a := range histories[id].Activities {
				cutAgain := i+1 < len(kills) && a.Started.After(kills[i+1].At)
				if a.Scheduled.Before(k.At) && a.Started.After(k.Restart) && a.Attempt > 1 && !cutAgain {
					sandboxRun := isSandboxActivity(a.Type)
					retried[sandboxRun] = append(retried[sandboxRun], a.Started.Sub(k.Restart))
				}
			}
			at, ok := histories[id].completionAfter(k.Restart)
			if !ok {
				continue
			}
			mine = append(mine, at.Sub(k.Restart))
			// A later kill may have cut the retry too: only the bound
			// check leaves such a task out.
			if i+1 < len(kills) && at.After(kills[i+1].At) {
				superseded++
				continue
			}
			bounded = append(bounded, at.Sub(k.Restart))
		}
		waits = append(waits, mine...)
		t.Logf("kill %d (%s): first progress of any task %s after restart; interrupted tasks resumed after p50 %s, max %s (%d tasks)",
			i+1, k.Target, firstAny.Round(time.Millisecond), percentile(mine, 50).Round(time.Millisecond),
			percentile(mine, 100).Round(time.Millisecond), len(mine))
	}
	within := 0
	for _, w := range waits {
		if w <= recoveryTarget {
			within++
		}
	}
	t.Logf("restart to next progress of interrupted tasks: p50 %s, max %s over %d tasks (%d within the %s target; %d of them resumed only after a later kill)",
		percentile(waits, 50).Round(time.Millisecond), percentile(waits, 100).Round(time.Millisecond), len(waits),
		within, recoveryTarget, superseded)
	t.Logf("restart to first progress: p50 %s, max %s over %d restarts; interrupted tasks not cut again: max %s",
		percentile(firsts, 50).Round(time.Millisecond), percentile(firsts, 100).Round(time.Millisecond), len(firsts),
		percentile(bounded, 100).Round(time.Millisecond))
	describeRetries := func(ds []time.Duration) string {
		resumed := 0
		for _, w := range ds {
			if w <= recoveryTarget {
				resumed++
			}
		}
		return fmt.Sprintf("p50 %s, max %s over %d activities (%d within the %s target)",
			percentile(ds, 50).Round(time.Millisecond), percentile(ds, 100).Round(time.Millisecond), len(ds), resumed, recoveryTarget)
	}
	t.Logf("restart to the retry of each cut activity starting (not cut again): model and store activities %s; "+
		"sandbox runs, whose retry also waits for a free slot in the sandbox task queue, %s",
		describeRetries(retried[false]), describeRetries(retried[true]))
	if m := percentile(firsts, 100); m > recoveryBound {
		t.Errorf("the restarted worker made no progress for %s, longer than the %s the activity timeouts allow", m, recoveryBound)
	}
}

// checkRepeats allows a prompt to reach the model again only when a kill
// cut its earlier call (or came so soon after the answer that the memo may
// not have been written), and never more often than there were kills.
func checkRepeats(t *testing.T, calls []modelCall, kills []kill) {
	t.Helper()
	byPrompt := map[string][]modelCall{}
	for _, c := range calls {
		byPrompt[c.Prompt] = append(byPrompt[c.Prompt], c)
	}
	repeats, cut := 0, 0
	for _, c := range calls {
		if c.Cut {
			cut++
		}
	}
	for prompt, cs := range byPrompt {
		repeats += len(cs) - 1
		if len(cs)-1 > len(kills) {
			t.Errorf("prompt %s reached the model %d times with only %d kills", prompt, len(cs), len(kills))
		}
		for i := 1; i < len(cs); i++ {
			if !interrupted(cs[i-1], kills) {
				t.Errorf("prompt %s asked again at %s although its call of %s–%s was not interrupted by a kill",
					prompt, cs[i].Start.Format(time.TimeOnly), cs[i-1].Start.Format(time.StampMilli), cs[i-1].End.Format(time.StampMilli))
			}
		}
	}
	t.Logf("model: %d calls for %d distinct prompts; %d repeated (%d calls cut by kills, %d kills)",
		len(calls), len(byPrompt), repeats, cut, len(kills))
}

func interrupted(c modelCall, kills []kill) bool {
	for _, k := range kills {
		if c.Start.Before(k.At) && (c.Cut || c.End.After(k.At.Add(-memoGrace))) {
			return true
		}
	}
	return false
}

// jitter is a seeded random duration in [0, d).
func jitter(rng *rand.Rand, d time.Duration) time.Duration {
	return time.Duration(rng.Int64N(int64(d)))
}
