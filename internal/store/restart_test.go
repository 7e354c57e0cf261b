package store

import (
	"bufio"
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"testing"
	"time"
)

// The test binary re-runs itself as a child process when childEnv is set:
// "write" stores large snapshots until killed, "open" opens and closes.
const (
	childEnv       = "AUTOCODER_STORE_TEST_CHILD"
	childTargetEnv = "AUTOCODER_STORE_TEST_TARGET"
)

func TestMain(m *testing.M) {
	if mode := os.Getenv(childEnv); mode != "" {
		if err := runChild(mode, os.Getenv(childTargetEnv)); err != nil {
			fmt.Fprintln(os.Stderr, "child:", err)
			os.Exit(1)
		}
		os.Exit(0)
	}
	os.Exit(m.Run())
}

func runChild(mode, target string) error {
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
	for i := 0; ctx.Err() == nil; i++ {
		files := genFiles(300, 8<<10, fmt.Sprintf("%d/%d", os.Getpid(), i))
		fmt.Printf("begin %d\n", i)
		id, err := s.PutSnapshot(ctx, files)
		if err != nil {
			return err
		}
		fmt.Printf("commit %s\n", id)
	}
	return ctx.Err()
}

func child(mode, target string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"="+mode, childTargetEnv+"="+target)
	return cmd
}

// TestRestartSafety kills a writer process mid-snapshot, several times, and
// checks that every visible snapshot is whole and every acknowledged one
// survived.
func TestRestartSafety(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			target := b.target(t)
			var acked []string
			for round := range 3 {
				acked = append(acked, killWriter(t, target)...)
				s := openTarget(t, target)
				if err := Verify(context.Background(), s); err != nil {
					t.Fatalf("round %d: %v", round, err)
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
						t.Fatalf("round %d: acknowledged snapshot %s is gone", round, id)
					}
				}
				// At most the snapshot in flight may have committed unseen.
				if len(ids) > len(acked)+round+1 {
					t.Fatalf("round %d: %d snapshots, only %d acknowledged", round, len(ids), len(acked))
				}
				t.Logf("round %d: %d snapshots stored, %d acknowledged", round, len(ids), len(acked))
				if err := s.Close(); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// killWriter runs a writer child and SIGKILLs it soon after it begins its
// fourth snapshot; it returns the ids the child reported committed. The
// child must die inside PutSnapshot: its last line is "begin".
func killWriter(t *testing.T, target string) []string {
	t.Helper()
	cmd := child("write", target)
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
		if !killed && line == "begin 3" {
			time.Sleep(time.Duration(rand.IntN(40)) * time.Millisecond)
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
	if !strings.HasPrefix(last, "begin ") {
		t.Fatalf("writer was killed between snapshots, after %q", last)
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
