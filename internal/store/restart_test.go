package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/workspace"
)

// The test binary re-runs itself as a child process when childEnv is set:
// "write" stores large snapshots until killed, "open" opens and closes. A
// writer given childStopEnv stops inside its fourth snapshot at that step of
// the write (see writeStepHook), says so, and waits to be killed.
const (
	childEnv       = "AUTOCODER_STORE_TEST_CHILD"
	childTargetEnv = "AUTOCODER_STORE_TEST_TARGET"
	childStopEnv   = "AUTOCODER_STORE_TEST_STOP_AT"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		if err := runChild(mode, os.Getenv(childTargetEnv), os.Getenv(childStopEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runChild(mode, target, stopAt string) error {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute) // outlive no parent
	defer cancel()
	s, err := Open(ctx, targetConfig(target))
	if err != nil {
		return err
	}
	defer s.Close()
	if mode != "write" {
		return nil
	}
	const stopIn = 3
	var prev string
	for i := 0; ctx.Err() == nil; i++ {
		writeStepHook = func(step string) {
			if i == stopIn && step == stopAt {
				fmt.Printf("stopped %d at %s\n", i, step)
				<-ctx.Done()
			}
		}
		files := genFiles(300, 8<<10, fmt.Sprintf("%d/%d", os.Getpid(), i))
		fmt.Printf("begin %d\n", i)
		var id string
		if i%2 == 0 {
			id, err = s.PutSnapshot(ctx, files)
		} else { // the one stopped in is a change of the one before
			writes := []workspace.File{files[0], {Path: "new/" + files[1].Path, Data: files[1].Data}}
			id, err = s.PutSnapshotDelta(ctx, prev, writes, []string{files[2].Path})
		}
		if err != nil {
			return err
		}
		prev = id
		fmt.Printf("commit %s\n", id)
	}
	return ctx.Err()
}

func child(mode, target string, env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childTargetEnv+"="+target)
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// TestRestartSafety kills a writer process inside a snapshot write, once at
// each step of it, and checks that every visible snapshot is whole, every
// acknowledged one survived, and only a committed one was added unseen.
func TestRestartSafety(t *testing.T) {
	steps := []struct {
		name      string
		committed bool // the snapshot in flight is stored, unacknowledged
	}{
		{"snapshot row", false},
		{"entries", false},
		{"committed", true},
	}
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			target := b.target(t)
			var acked []string
			unseen := 0
			for round, step := range steps {
				acked = append(acked, killWriter(t, target, step.name)...)
				if step.committed {
					unseen++
				}
				s := openTarget(t, target)
				if err := Verify(context.Background(), s); err != nil {
					t.Fatalf("round %d (%s): %v", round, step.name, err)
				}
				ids, err := s.Snapshots(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				have := make(map[string]bool, len(ids))
				for _, id := range ids {
					have[id] = true
				}
				for _, id := range acked {
					if !have[id] {
						t.Fatalf("round %d (%s): acknowledged snapshot %s is gone", round, step.name, id)
					}
				}
				if len(ids) != len(acked)+unseen {
					t.Fatalf("round %d (%s): %d snapshots, %d acknowledged, want %d more",
						round, step.name, len(ids), len(acked), unseen)
				}
				t.Logf("round %d (%s): %d snapshots stored, %d acknowledged", round, step.name, len(ids), len(acked))
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// killWriter runs a writer child, SIGKILLs it once it has stopped at step
// inside its fourth snapshot, and returns the ids it reported committed.
func killWriter(t *testing.T, target, step string) []string {
	t.Helper()
	cmd := child("write", target, childStopEnv+"="+step)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var acked []string
	var last string
	killed := false
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		line := lines.Text()
		last = line
		if id, ok := strings.CutPrefix(line, "commit "); ok {
			acked = append(acked, id)
		}
		if !killed && strings.HasPrefix(line, "stopped ") {
			if err := cmd.Process.Kill(); err != nil { // SIGKILL on Unix
				t.Fatal(err)
			}
			killed = true
		}
	}
	err = cmd.Wait()
	var exit *exec.ExitError
	if !killed || !errors.As(err, &exit) || exit.Exited() {
		t.Fatalf("writer ended on its own (killed %v): %v\n%s", killed, err, stderr.Bytes())
	}
	if want := "stopped 3 at " + step; last != want {
		t.Fatalf("writer said %q last, want %q", last, want)
	}
	if len(acked) != 3 {
		t.Fatalf("writer acknowledged %d snapshots before the fourth, want 3", len(acked))
	}
	return acked
}

// TestConcurrentFirstOpen starts several processes on one empty database at
// once: the migration must run exactly once and leave a clean schema.
func TestConcurrentFirstOpen(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			target := b.target(t)
			var wg sync.WaitGroup
			for range 4 {
				cmd := child("open", target)
				wg.Go(func() {
					if out, err := cmd.CombinedOutput(); err != nil {
						t.Errorf("child open: %v\n%s", err, out)
					}
				})
			}
			wg.Wait()
			s := openTarget(t, target)
			id := mustPut(t, s, genFiles(3, 10, "after"))
			if _, err := s.GetSnapshot(context.Background(), id); err != nil {
				t.Fatal(err)
			}
		})
	}
}
