package devserver

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"syscall"
	"time"

	"github.com/autocoder/autocoder/internal/owner"
)

const (
	// AddressFileName, under the data dir, names the running server. It is
	// written once the server serves and removed when it stops, so clients
	// trust it rather than whatever listens on a port.
	AddressFileName = "server.json"
	// startLockFileName serializes starting a server for a data dir: whoever
	// holds it is starting one, and the others wait for the address file.
	startLockFileName = "server-start.lock"
	// attachFileName's modification time is when a client last attached.
	attachFileName = "server.attach"
)

// ErrNotRunning reports that no live server is named by a data dir.
var ErrNotRunning = errors.New("no local server running")

// Address is what the address file holds.
type Address struct {
	Frontend  string    `json:"frontend"`
	UI        string    `json:"ui,omitempty"`
	Namespace string    `json:"namespace"`
	PID       int       `json:"pid"`
	Owner     string    `json:"owner"` // owner.ID of the server process
	Started   time.Time `json:"started"`
	LogFile   string    `json:"logFile,omitempty"`
	// Settings fingerprint the environment the server's worker runs
	// tasks with (names to values, secrets hashed), for clients to compare
	// with their own.
	Settings map[string]string `json:"settings,omitempty"`
	// Settingsless marks a server started by a command that only reads:
	// its worker runs no activity, so open tasks wait for a server
	// started with settings, and the next command that has some replaces it.
	Settingsless bool `json:"settingsless,omitempty"`
}

// WriteAddress publishes a to the data dir, atomically: a reader sees the
// whole file or none.
func WriteAddress(dataDir string, a Address) error {
	b, err := json.MarshalIndent(a, "", "  ")
	if err != nil {
		return fmt.Errorf("encode address: %w", err)
	}
	tmp, err := os.CreateTemp(dataDir, AddressFileName+".*")
	if err != nil {
		return fmt.Errorf("write address: %w", err)
	}
	defer os.Remove(tmp.Name()) // a no-op after the rename
	if _, err := tmp.Write(append(b, '\n')); err != nil {
		tmp.Close()
		return fmt.Errorf("write address: %w", err)
	}
	if err := tmp.Close(); err != nil {
		return fmt.Errorf("write address: %w", err)
	}
	if err := os.Rename(tmp.Name(), filepath.Join(dataDir, AddressFileName)); err != nil {
		return fmt.Errorf("write address: %w", err)
	}
	return nil
}

// ReadAddress returns the address of the data dir's live server, or
// ErrNotRunning when there is no address file or its server has exited.
func ReadAddress(dataDir string) (Address, error) {
	var a Address
	b, err := os.ReadFile(filepath.Join(dataDir, AddressFileName))
	if errors.Is(err, os.ErrNotExist) {
		return a, ErrNotRunning
	}
	if err != nil {
		return a, fmt.Errorf("read address: %w", err)
	}
	if err := json.Unmarshal(b, &a); err != nil || a.Frontend == "" {
		// A half-written file cannot exist (WriteAddress renames), so this
		// one was damaged: it names nothing usable.
		return a, ErrNotRunning
	}
	host, _ := os.Hostname()
	if gone, _ := owner.Gone(a.Owner, host); gone {
		return a, ErrNotRunning
	}
	return a, nil
}

// RemoveAddress removes the address file if it still names this process.
func RemoveAddress(dataDir string) error {
	a, err := ReadAddress(dataDir)
	if err != nil || a.Owner != owner.ID() {
		return nil
	}
	if err := os.Remove(filepath.Join(dataDir, AddressFileName)); err != nil && !errors.Is(err, os.ErrNotExist) {
		return fmt.Errorf("remove address: %w", err)
	}
	return nil
}

// LockStart takes the data dir's start lock, waiting while another process
// holds it, until ctx ends. The lock is the returned file's: closing it (in
// every process that shares it) releases the lock, and so does exiting.
func LockStart(ctx context.Context, dataDir string) (*os.File, error) {
	if err := os.MkdirAll(dataDir, 0o700); err != nil {
		return nil, fmt.Errorf("create data dir: %w", err)
	}
	f, err := os.OpenFile(filepath.Join(dataDir, startLockFileName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open start lock: %w", err)
	}
	tick := time.NewTicker(50 * time.Millisecond)
	defer tick.Stop()
	for {
		err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB)
		if err == nil {
			return f, nil
		}
		if !errors.Is(err, syscall.EWOULDBLOCK) {
			f.Close()
			return nil, fmt.Errorf("lock %s: %w", f.Name(), err)
		}
		select {
		case <-ctx.Done():
			f.Close()
			return nil, fmt.Errorf("wait for the local server to start: %w", context.Cause(ctx))
		case <-tick.C:
		}
	}
}

// Touch records that a client attached just now, which keeps an idle
// server up for another idle period.
func Touch(dataDir string) error {
	p := filepath.Join(dataDir, attachFileName)
	now := time.Now()
	if err := os.Chtimes(p, now, now); err == nil {
		return nil
	}
	f, err := os.OpenFile(p, os.O_CREATE|os.O_WRONLY, 0o600)
	if err != nil {
		return fmt.Errorf("touch %s: %w", p, err)
	}
	return f.Close()
}

// lastAttach is when a client last attached, or the zero time.
func lastAttach(dataDir string) time.Time {
	info, err := os.Stat(filepath.Join(dataDir, attachFileName))
	if err != nil {
		return time.Time{}
	}
	return info.ModTime()
}

// AdoptStartLock takes over the start lock that the process which started
// this one passed as file descriptor fd, after checking that fd is the data
// dir's start lock. The descriptor is closed on exec, so that the lock is
// not held by the processes this one starts.
func AdoptStartLock(dataDir string, fd uintptr) (*os.File, error) {
	f := os.NewFile(fd, startLockFileName)
	if f == nil {
		return nil, fmt.Errorf("no start lock passed as file descriptor %d", fd)
	}
	got, err := f.Stat()
	if err != nil {
		return nil, fmt.Errorf("no start lock passed as file descriptor %d: %w", fd, err)
	}
	want, err := os.Stat(filepath.Join(dataDir, startLockFileName))
	if err != nil || !os.SameFile(got, want) {
		return nil, fmt.Errorf("file descriptor %d is not the start lock of %s", fd, dataDir)
	}
	syscall.CloseOnExec(int(fd))
	return f, nil
}
