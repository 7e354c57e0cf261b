//go:build !unix

package workspace

// freeBytes cannot measure free space here; WriteDir relies on undoing a
// write that runs out of room.
func freeBytes(string) (uint64, bool) { return 0, false }
