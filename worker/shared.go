package worker

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
)

// SharedDir is a directory the worker and the docker daemon see at the
// same path (sandbox.shared_dir): a worker in a container that starts its
// sandboxes through the host's docker socket. A bind mount names a path
// of the daemon's machine, so what a sandbox mounts from the worker (the
// egress forwarder, the proxy's sockets, the CA bundle, the installed
// dependencies) must be in it.
type SharedDir string

// Check makes sure the directory is there and the worker may write in it.
func (d SharedDir) Check() error {
	fi, err := os.Stat(string(d))
	if err != nil {
		return fmt.Errorf("sandbox.shared_dir: %w", err)
	}
	if !fi.IsDir() {
		return fmt.Errorf("sandbox.shared_dir: %s is not a directory", d)
	}
	// The egress proxy's sockets are made two levels down; a unix socket's
	// path holds at most 107 bytes.
	if n := len(filepath.Join(string(d), "autocoder-egress-0123456789", "proxy.sock")); n > 107 {
		return fmt.Errorf("sandbox.shared_dir: %s is too long a path for the egress proxy's sockets (%d bytes of at most 107 with theirs): choose a shorter one", d, n)
	}
	f, err := os.CreateTemp(string(d), ".write-check-")
	if err != nil {
		return fmt.Errorf("sandbox.shared_dir: this worker cannot write in %s (it must be the worker user's): %w", d, err)
	}
	f.Close()
	return os.Remove(f.Name())
}

// DepsDir is where installs are kept.
func (d SharedDir) DepsDir() string { return filepath.Join(string(d), "deps") }

// Copy puts a copy of the file src in the directory, readable by all
// (the sandbox's user runs the forwarder and reads the CA bundle), and
// returns its path. The name holds the content's hash: workers of other
// versions sharing the directory keep their own copies, and a copy is
// never changed under a run that mounts it.
func (d SharedDir) Copy(src, name string) (string, error) {
	data, err := os.ReadFile(src)
	if err != nil {
		return "", fmt.Errorf("share %s with the docker daemon: %w", src, err)
	}
	fi, err := os.Stat(src)
	if err != nil {
		return "", fmt.Errorf("share %s with the docker daemon: %w", src, err)
	}
	sum := sha256.Sum256(data)
	dst := filepath.Join(string(d), name+"-"+hex.EncodeToString(sum[:6]))
	if cur, err := os.ReadFile(dst); err == nil && sha256.Sum256(cur) == sum {
		return dst, nil
	} else if err != nil && !errors.Is(err, fs.ErrNotExist) {
		return "", fmt.Errorf("share %s with the docker daemon: %w", src, err)
	}
	mode := os.FileMode(0o444)
	if fi.Mode()&0o100 != 0 {
		mode = 0o555
	}
	tmp, err := os.CreateTemp(string(d), "."+name+"-")
	if err != nil {
		return "", fmt.Errorf("share %s with the docker daemon: %w", src, err)
	}
	defer os.Remove(tmp.Name()) // gone by then on success
	_, err = tmp.Write(data)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Chmod(tmp.Name(), mode)
	}
	if err == nil {
		err = os.Rename(tmp.Name(), dst)
	}
	if err != nil {
		return "", fmt.Errorf("share %s with the docker daemon: %w", src, err)
	}
	return dst, nil
}
