//go:build unix

package workspace

import "syscall"

// freeBytes is the space an unprivileged writer may still use on the file
// system holding dir.
func freeBytes(dir string) (uint64, bool) {
	var st syscall.Statfs_t
	if err := syscall.Statfs(dir, &st); err != nil {
		return 0, false
	}
	return uint64(st.Bavail) * uint64(st.Bsize), true // field types differ between systems
}
