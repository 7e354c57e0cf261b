package devserver

import (
	"errors"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"syscall"
)

// checkPort verifies that 127.0.0.1:port can be bound, or picks a free port
// when port is 0. The port is released again, so a tight race with another
// process remains; it turns the common "already running" case into an error
// instead of a failure deep inside a server.
func checkPort(port int) (int, error) {
	ports, err := freePorts(port)
	if err != nil {
		return 0, err
	}
	return ports[0], nil
}

// pickPort is checkPort, falling back to a free port when port is taken
// and fallBack is set.
func pickPort(port int, fallBack bool) (int, error) {
	got, err := checkPort(port)
	if fallBack && errors.Is(err, ErrPortInUse) {
		return checkPort(0)
	}
	return got, err
}

// freePorts binds every requested port at once (0 = any) so that the picked
// ports are distinct, then releases them.
func freePorts(ports ...int) ([]int, error) {
	listeners := make([]net.Listener, 0, len(ports))
	defer func() {
		for _, l := range listeners {
			_ = l.Close()
		}
	}()
	got := make([]int, 0, len(ports))
	for _, port := range ports {
		l, err := net.Listen("tcp", net.JoinHostPort(host, strconv.Itoa(port)))
		if errors.Is(err, syscall.EADDRINUSE) {
			return nil, fmt.Errorf("%s:%d: %w", host, port, ErrPortInUse)
		}
		if err != nil {
			return nil, fmt.Errorf("bind %s:%d: %w", host, port, err)
		}
		listeners = append(listeners, l)
		got = append(got, l.Addr().(*net.TCPAddr).Port)
	}
	return got, nil
}

// lockDataDir takes an exclusive advisory lock so two processes never run a
// server on the same SQLite file. The kernel drops the lock if the process
// dies, so a crash never leaves the directory locked.
func lockDataDir(dir string) (*os.File, error) {
	f, err := os.OpenFile(filepath.Join(dir, lockFileName), os.O_CREATE|os.O_RDWR, 0o600)
	if err != nil {
		return nil, fmt.Errorf("open lock file: %w", err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
		_ = f.Close()
		if errors.Is(err, syscall.EWOULDBLOCK) {
			return nil, fmt.Errorf("lock %s: %w", dir, ErrDataDirLocked)
		}
		return nil, fmt.Errorf("lock %s: %w", dir, err)
	}
	return f, nil
}
