// Package owner names the process that owns something it leaves behind if
// it dies (a sandbox container, a record of an activity in flight), so that
// a successor can tell whether the owner is gone and clean up after it.
package owner

import (
	"bytes"
	"errors"
	"os"
	"strconv"
	"strings"
	"syscall"
)

// ID names this process as "host/pid/start". The start time (clock ticks
// after boot) tells a restarted process from the one before it: a
// restarted container gets the same hostname and pid.
func ID() string {
	host, _ := os.Hostname()
	return host + "/" + strconv.Itoa(os.Getpid()) + "/" + processStart(os.Getpid())
}

// Gone reports whether the process that id names has exited. Only a
// process of this host, whose name is host, can be checked: local is false
// for the others. An id that names no process at all is gone; one written
// without a start time is judged by its pid alone.
func Gone(id, host string) (gone, local bool) {
	parts := strings.Split(id, "/")
	if len(parts) < 2 {
		return true, true
	}
	pid, err := strconv.Atoi(parts[1])
	if err != nil || pid <= 0 {
		return true, true
	}
	if parts[0] != host {
		return false, false
	}
	if len(parts) > 2 {
		return processStart(pid) != parts[2], true
	}
	err = syscall.Kill(pid, 0)
	return err != nil && !errors.Is(err, syscall.EPERM), true
}

// processStart returns a process's start time from /proc, or "" when the
// process does not exist or has exited: a killed process its parent has not
// waited for yet still has its entry, as a zombie.
func processStart(pid int) string {
	stat, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/stat")
	if err != nil {
		return ""
	}
	// Fields after the ")" that closes the command name start at field 3
	// (state); the start time is field 22.
	f := strings.Fields(string(stat[bytes.LastIndexByte(stat, ')')+1:]))
	if len(f) < 20 || f[0] == "Z" || f[0] == "X" {
		return ""
	}
	return f[19]
}
