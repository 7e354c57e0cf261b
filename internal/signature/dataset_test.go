package signature

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The dataset: each directory under testdata/programs is a small broken
// project with a CLASS file naming its bug class. TestRegenerateDataset runs
// every project for real and stores what the toolchain printed under
// testdata/errors, with labels.json mapping output file to class. The
// evaluation and fuzz tests read those stored outputs.

const (
	programsDir = "testdata/programs"
	errorsDir   = "testdata/errors"
	labelsFile  = "labels.json"
	classFile   = "CLASS"
)

// Wall-clock limits, as the executor applies them; go gets longer because
// its limit includes compiling.
var wallClock = map[string]time.Duration{"python": 8 * time.Second, "go": 20 * time.Second}

// sample is one stored output of the dataset.
type sample struct {
	File   string // name under testdata/errors
	Lang   string
	Class  string
	Output string
}

// langOf derives the language from the output's file name, which is the
// program directory's name: py_* or go_*.
func langOf(name string) string {
	if strings.HasPrefix(name, "go_") {
		return "go"
	}
	return "python"
}

// loadDataset reads the stored outputs and their labels.
func loadDataset(t testing.TB) []sample {
	t.Helper()
	raw, err := os.ReadFile(filepath.Join(errorsDir, labelsFile))
	if err != nil {
		t.Fatalf("read labels: %v", err)
	}
	var labels map[string]string
	if err := json.Unmarshal(raw, &labels); err != nil {
		t.Fatalf("decode labels: %v", err)
	}
	names := make([]string, 0, len(labels))
	for name := range labels {
		names = append(names, name)
	}
	sort.Strings(names)
	out := make([]sample, 0, len(names))
	for _, name := range names {
		data, err := os.ReadFile(filepath.Join(errorsDir, name))
		if err != nil {
			t.Fatalf("read output: %v", err)
		}
		out = append(out, sample{File: name, Lang: langOf(name), Class: labels[name], Output: string(data)})
	}
	return out
}

func TestRegenerateDataset(t *testing.T) {
	if os.Getenv("AUTOCODER_REGEN_ERRORS") != "1" {
		t.Skip("set AUTOCODER_REGEN_ERRORS=1 to re-run the programs and rewrite testdata/errors")
	}
	python := pythonWithPytest(t)
	if _, err := exec.LookPath("go"); err != nil {
		t.Fatalf("go toolchain: %v", err)
	}
	entries, err := os.ReadDir(programsDir)
	if err != nil {
		t.Fatalf("list programs: %v", err)
	}
	if err := os.MkdirAll(errorsDir, 0o755); err != nil {
		t.Fatalf("create errors dir: %v", err)
	}
	labels := map[string]string{}
	for _, e := range entries {
		if !e.IsDir() {
			continue
		}
		name := e.Name()
		class, err := os.ReadFile(filepath.Join(programsDir, name, classFile))
		if err != nil {
			t.Fatalf("program %s: %v", name, err)
		}
		lang := langOf(name)
		out, failed, err := runProgram(t, python, lang, filepath.Join(programsDir, name))
		if err != nil {
			t.Fatalf("program %s: %v", name, err)
		}
		if !failed {
			t.Errorf("program %s passed; every program must fail", name)
		}
		file := name + ".txt"
		if err := os.WriteFile(filepath.Join(errorsDir, file), []byte(out), 0o644); err != nil {
			t.Fatalf("write output: %v", err)
		}
		labels[file] = strings.TrimSpace(string(class))
		t.Logf("%s (%s): %d bytes", name, labels[file], len(out))
	}
	data, err := json.MarshalIndent(labels, "", "  ")
	if err != nil {
		t.Fatalf("encode labels: %v", err)
	}
	if err := os.WriteFile(filepath.Join(errorsDir, labelsFile), append(data, '\n'), 0o644); err != nil {
		t.Fatalf("write labels: %v", err)
	}
}

// pythonWithPytest finds an interpreter that can import pytest.
func pythonWithPytest(t *testing.T) string {
	t.Helper()
	for _, p := range []string{"python3", "/usr/bin/python3"} {
		if exec.Command(p, "-c", "import pytest").Run() == nil {
			return p
		}
	}
	t.Fatal("no python3 with pytest (apt-get install python3-pytest)")
	return ""
}

// runProgram copies the program into a fresh temp dir, runs its tests the
// way the product does, and returns the combined output with the executor's
// timeout marker appended when the wall clock ran out.
func runProgram(t *testing.T, python, lang, src string) (out string, failed bool, err error) {
	dir := t.TempDir()
	if err := copyProgram(src, dir); err != nil {
		return "", false, fmt.Errorf("copy program: %w", err)
	}
	limit := wallClock[lang]
	ctx, cancel := context.WithTimeout(context.Background(), limit)
	defer cancel()
	var cmd *exec.Cmd
	if lang == "go" {
		cmd = exec.CommandContext(ctx, "go", "test", "./...")
		cmd.Env = append(os.Environ(), "GOFLAGS=-mod=mod", "GOPROXY=off", "GOWORK=off", "GOTOOLCHAIN=local")
	} else {
		cmd = exec.CommandContext(ctx, python, "-m", "pytest", "-q")
		cmd.Env = append(os.Environ(), "PYTHONDONTWRITEBYTECODE=1")
	}
	cmd.Dir = dir
	// go test runs the test binary as a child: kill the whole group.
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	cmd.WaitDelay = 2 * time.Second
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	start := time.Now()
	runErr := cmd.Run()
	elapsed := time.Since(start)
	var exit *exec.ExitError
	if runErr != nil && !errors.As(runErr, &exit) && ctx.Err() == nil {
		return "", false, fmt.Errorf("run tests: %w", runErr)
	}
	out = stdout.String()
	if stderr.Len() > 0 {
		out += "\n" + stderr.String()
	}
	if ctx.Err() != nil {
		out += fmt.Sprintf("\n[killed: wall-clock timeout after %s]", elapsed.Round(time.Millisecond))
	}
	return out, runErr != nil, nil
}

func copyProgram(src, dst string) error {
	return filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, err := filepath.Rel(src, p)
		if err != nil {
			return err
		}
		if d.IsDir() {
			return os.MkdirAll(filepath.Join(dst, rel), 0o755)
		}
		if rel == classFile {
			return nil
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		return os.WriteFile(filepath.Join(dst, rel), data, 0o644)
	})
}
