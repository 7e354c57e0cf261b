package sandbox

import (
	"crypto/rand"
	"encoding/binary"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"sync/atomic"
	"syscall"
)

// The host uids a root worker runs bwrap sandboxes as, one per sandbox.
// The kernel counts processes (RLIMIT_NPROC) and user namespaces per uid:
// with one uid for all, a fork bomb in one sandbox stops every other from
// starting. The range is far above the uids of users and of systemd's
// dynamic users and container ranges; no file on the host belongs to it.
const (
	uidPoolBase = 0x7a000000
	uidPoolSize = 4096
)

// uidPool hands out the uids of the range. A uid is held by an flock on a
// file named after it, in a directory all workers of the host share, so
// that two workers never use one uid at once; the kernel drops the lock
// of a worker that dies. Each pool goes round the range from a random
// start, so a uid just released is not taken again at once, while the
// last processes of its sandbox may still be exiting.
type uidPool struct {
	dir  string
	next atomic.Uint32
}

// uidLease is one uid held until release.
type uidLease struct {
	uid  uint32
	lock *os.File
}

func (l *uidLease) release() {
	if l != nil {
		l.lock.Close()
	}
}

func newUIDPool(dir string) (*uidPool, error) {
	dir, err := privateDir(dir, 0o700)
	if err != nil {
		return nil, err
	}
	p := &uidPool{dir: dir}
	var b [4]byte
	_, _ = rand.Read(b[:])
	p.next.Store(binary.LittleEndian.Uint32(b[:]) % uidPoolSize)
	return p, nil
}

// acquire takes the next free uid of the range.
func (p *uidPool) acquire() (*uidLease, error) {
	for range uidPoolSize {
		n := p.next.Add(1) % uidPoolSize
		f, err := os.OpenFile(filepath.Join(p.dir, strconv.FormatUint(uint64(n), 10)), os.O_RDWR|os.O_CREATE, 0o600)
		if err != nil {
			return nil, fmt.Errorf("sandbox uid: %w", err)
		}
		if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX|syscall.LOCK_NB); err != nil {
			f.Close()
			continue
		}
		return &uidLease{uid: uidPoolBase + n, lock: f}, nil
	}
	return nil, fmt.Errorf("sandbox uid: all %d sandbox uids are in use; lower the sandbox slots or pool size", uidPoolSize)
}

// credential is what a root worker starts a sandbox's processes with.
func (l *uidLease) credential() *syscall.Credential {
	return &syscall.Credential{Uid: l.uid, Gid: l.uid, Groups: []uint32{}}
}
