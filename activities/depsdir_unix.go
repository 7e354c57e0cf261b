//go:build unix

package activities

import (
	"io/fs"
	"os"
	"syscall"
)

// ownedByWorker says whether this process's user owns fi's file.
func ownedByWorker(fi fs.FileInfo) bool {
	st, ok := fi.Sys().(*syscall.Stat_t)
	return ok && int(st.Uid) == os.Geteuid()
}
