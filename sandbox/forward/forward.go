// Package forward is the egress forwarder, which runs inside a sandbox
// whose only route out is the egress proxy's unix socket: it listens on
// an address of the sandbox's own loopback, forwards each connection to
// the socket, and runs the command meanwhile, exiting with its status.
//
//	egress-forward LISTEN SOCKET -- CMD [ARG...]
//
// The autocoder executable is one: run under the name Name (its argv[0]),
// it is the forwarder and nothing else. The sandbox mounts it read-only
// (with its loader and libraries when it is dynamically linked), so it
// runs in any image.
package forward

import (
	"fmt"
	"io"
	"net"
	"os"
	"os/exec"
	"os/signal"
	"path/filepath"
	"syscall"
)

// Exit codes of its own, as sh has them.
const (
	exitSetup    = 125 // the listener could not start
	exitNotFound = 127 // the command could not start
)

// Name is the forwarder's program name: an executable started under it
// (the base name of its argv[0]) is the forwarder.
const Name = "egress-forward"

// Is reports whether argv0, a process's argv[0], names the forwarder.
func Is(argv0 string) bool { return filepath.Base(argv0) == Name }

// Main runs the forwarder with its arguments (argv without argv[0]) and
// returns the exit status: the command's, or 125 when the listener could
// not start and 127 when the command could not.
func Main(args []string) int {
	if len(args) < 4 || args[2] != "--" {
		fmt.Fprintln(os.Stderr, "usage: egress-forward LISTEN SOCKET -- CMD [ARG...]")
		return exitSetup
	}
	l, err := net.Listen("tcp", args[0])
	if err != nil {
		fmt.Fprintf(os.Stderr, "egress-forward: listen: %v\n", err)
		return exitSetup
	}
	go serve(l, args[1])
	cmd := exec.Command(args[3], args[4:]...)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintf(os.Stderr, "egress-forward: %v\n", err)
		return exitNotFound
	}
	// The command gets the signals meant for it.
	sigs := make(chan os.Signal, 1)
	signal.Notify(sigs, syscall.SIGINT, syscall.SIGTERM, syscall.SIGHUP)
	go func() {
		for s := range sigs {
			_ = cmd.Process.Signal(s)
		}
	}()
	_ = cmd.Wait()
	st := cmd.ProcessState.Sys().(syscall.WaitStatus)
	if st.Signaled() {
		return 128 + int(st.Signal())
	}
	return st.ExitStatus()
}

func serve(l net.Listener, socket string) {
	for {
		c, err := l.Accept()
		if err != nil {
			return
		}
		go forward(c.(*net.TCPConn), socket)
	}
}

// forward copies both ways between c and a new connection to the socket,
// passing on each side's end of writing.
func forward(c *net.TCPConn, socket string) {
	defer c.Close()
	u, err := net.Dial("unix", socket)
	if err != nil {
		fmt.Fprintf(os.Stderr, "egress-forward: %v\n", err)
		return
	}
	uc := u.(*net.UnixConn)
	defer uc.Close()
	done := make(chan struct{})
	go func() {
		_, _ = io.Copy(uc, c)
		_ = uc.CloseWrite()
		close(done)
	}()
	_, _ = io.Copy(c, uc)
	_ = c.CloseWrite()
	<-done
}
