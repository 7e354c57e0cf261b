// Package signature turns raw compiler, test-runner and executor output into
// a stable error signature, so that lessons learned from one failure can be
// recalled for a similar one.
package signature
