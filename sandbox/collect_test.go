package sandbox

import (
	"archive/tar"
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/autocoder/autocoder/internal/workspace"
)

func paths(files []workspace.File) []string {
	var out []string
	for _, f := range files {
		out = append(out, f.Path)
	}
	return out
}

// TestCollectFiles runs a command that writes, deletes and links files and
// gets the workdir back: regular files only, the link to /etc/passwd left
// out and not followed, the program's own output untouched.
func TestCollectFiles(t *testing.T) {
	script := `set -e
printf new > sub/new.txt 2>/dev/null || { mkdir sub && printf new > sub/new.txt; }
rm gone.txt
printf 'changed' > keep.txt
printf '#!/bin/sh\n' > tool.sh && chmod +x tool.sh
ln -s /etc/passwd passwd
ln -s / root
ln sub/new.txt hard.txt
mkfifo pipe
mkdir -p .git && printf x > .git/config
(while :; do printf x >> busy.txt; done) &
printf 'out without newline'`
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			r := testRunner(t, be, 0)
			res := run(t, r, Spec{Profile: "python", Files: files("keep.txt", "old", "gone.txt", "bye", "deep/same.txt", "same"), Cmd: sh(script), Collect: true})
			if res.ExitCode != 0 || res.FilesErr != nil {
				t.Fatalf("exit %d, files error %v, stderr %q", res.ExitCode, res.FilesErr, res.Stderr)
			}
			if res.Stdout != "out without newline" {
				t.Errorf("stdout %q, want the program's output alone", res.Stdout)
			}
			got := paths(res.Files)
			// busy.txt: the loop the command left behind is killed before
			// the files are read, so it may or may not have begun.
			got = slices.DeleteFunc(got, func(p string) bool { return p == "busy.txt" })
			want := []string{"deep/same.txt", "hard.txt", "keep.txt", "sub/new.txt", "tool.sh"}
			if !slices.Equal(got, want) {
				t.Fatalf("files %q, want %q", got, want)
			}
			byPath := map[string]workspace.File{}
			for _, f := range res.Files {
				byPath[f.Path] = f
			}
			if string(byPath["keep.txt"].Data) != "changed" || string(byPath["hard.txt"].Data) != "new" || string(byPath["deep/same.txt"].Data) != "same" {
				t.Errorf("contents: keep.txt %q, hard.txt %q, deep/same.txt %q", byPath["keep.txt"].Data, byPath["hard.txt"].Data, byPath["deep/same.txt"].Data)
			}
			if byPath["tool.sh"].FileMode() != 0o755 || byPath["keep.txt"].FileMode() != 0o644 {
				t.Errorf("modes: tool.sh %o, keep.txt %o", byPath["tool.sh"].FileMode(), byPath["keep.txt"].FileMode())
			}
			assertClean(t, r)
		})
	}
}

// TestCollectRefusesTooMuch checks that a workdir over the workspace limits
// comes back as an error of the files, with the run's outcome intact.
func TestCollectRefusesTooMuch(t *testing.T) {
	cases := []struct{ name, script string }{
		{"big file", `head -c 2000000 /dev/zero > big.bin; echo done`},
		{"many files", `mkdir d && cd d && i=0; while [ $i -le 5000 ]; do : > f$i; i=$((i+1)); done; echo done`},
	}
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			r := testRunner(t, be, 0)
			for _, tc := range cases {
				t.Run(tc.name, func(t *testing.T) {
					res := run(t, r, Spec{Profile: "python", Cmd: sh(tc.script), Collect: true})
					if res.ExitCode != 0 || res.Stdout != "done\n" {
						t.Fatalf("exit %d, stdout %q, stderr %q", res.ExitCode, res.Stdout, res.Stderr)
					}
					if !errors.Is(res.FilesErr, workspace.ErrTooLarge) || !errors.Is(res.FilesErr, ErrNotCollected) || res.Files != nil {
						t.Fatalf("files error %v with %d files, want a refusal", res.FilesErr, len(res.Files))
					}
				})
			}
		})
	}
}

// TestCollectOnlyWhenAsked checks that a run that does not collect, or is
// killed, brings no files back.
func TestCollectOnlyWhenAsked(t *testing.T) {
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			r := testRunner(t, be, 0)
			res := run(t, r, Spec{Profile: "python", Files: files("a.txt", "a"), Cmd: sh("echo hi > b.txt; echo hi")})
			if res.Files != nil || res.FilesErr != nil || res.Stdout != "hi\n" {
				t.Fatalf("without Collect: files %q, error %v, stdout %q", paths(res.Files), res.FilesErr, res.Stdout)
			}
			res = run(t, r, Spec{Profile: "python", Files: files("a.txt", "a", "b/c.txt", "c"), Cmd: sh("cat a.txt"), Collect: true})
			if got := paths(res.Files); res.FilesErr != nil || !slices.Equal(got, []string{"a.txt", "b/c.txt"}) || string(res.Files[1].Data) != "c" {
				t.Fatalf("a run that writes nothing: files %q, error %v", got, res.FilesErr)
			}
			lim := DefaultLimits()
			lim.Timeout = 500 * time.Millisecond
			res = run(t, r, Spec{Profile: "python", Cmd: sh("echo hi > b.txt; sleep 30"), Limits: lim, Collect: true})
			if !res.TimedOut || res.Files != nil || !errors.Is(res.FilesErr, ErrNotCollected) {
				t.Fatalf("timed out run: timed out %v, files %q, error %v", res.TimedOut, paths(res.Files), res.FilesErr)
			}
		})
	}
}

// TestSplitterFindsMarkerAcrossWrites feeds the stream a byte at a time.
func TestSplitterFindsMarkerAcrossWrites(t *testing.T) {
	marker := "\n" + collectMarker + " abc\n"
	stream := "out\n" + "\n" + collectMarker + " ab" + marker + "TAR"
	out := newCapWriter(1 << 10)
	tarBuf := newCapWriter(1 << 10)
	s := newSplitter(marker, out, tarBuf)
	for i := range len(stream) {
		if _, err := s.Write([]byte{stream[i]}); err != nil {
			t.Fatal(err)
		}
	}
	s.flush()
	gotOut, _ := out.result()
	gotTar, _ := tarBuf.result()
	if gotOut != "out\n\n"+collectMarker+" ab" || gotTar != "TAR" {
		t.Fatalf("out %q, tar %q", gotOut, gotTar)
	}
}

// TestReadFilesUntrustedArchive feeds readFiles entries a hostile program
// could forge: escapes, links out, a size that lies.
func TestReadFilesUntrustedArchive(t *testing.T) {
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	add := func(h tar.Header, data string) {
		h.Size = int64(len(data))
		if h.Typeflag != tar.TypeReg {
			h.Size = 0
		}
		if h.Mode == 0 {
			h.Mode = 0o644
		}
		if err := tw.WriteHeader(&h); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write([]byte(data)[:h.Size]); err != nil {
			t.Fatal(err)
		}
	}
	add(tar.Header{Typeflag: tar.TypeReg, Name: "./ok.txt"}, "ok")
	add(tar.Header{Typeflag: tar.TypeReg, Name: "../escape.txt"}, "x")
	add(tar.Header{Typeflag: tar.TypeReg, Name: "/etc/abs.txt"}, "x")
	add(tar.Header{Typeflag: tar.TypeReg, Name: "./.git/hooks/pre-commit"}, "x")
	add(tar.Header{Typeflag: tar.TypeSymlink, Name: "./link", Linkname: "/etc/passwd"}, "")
	add(tar.Header{Typeflag: tar.TypeLink, Name: "./hard-out", Linkname: "/etc/passwd"}, "")
	add(tar.Header{Typeflag: tar.TypeLink, Name: "./hard-in", Linkname: "./ok.txt"}, "")
	add(tar.Header{Typeflag: tar.TypeChar, Name: "./dev"}, "")
	add(tar.Header{Typeflag: tar.TypeReg, Name: "./ok.txt"}, "second")
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	got, err := readFiles(bytes.NewReader(buf.Bytes()), workspace.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if p := paths(got); !slices.Equal(p, []string{"ok.txt", "hard-in"}) || string(got[0].Data) != "ok" || string(got[1].Data) != "ok" {
		t.Fatalf("files %q", p)
	}
	small := workspace.Limits{MaxFileBytes: 1, MaxFiles: 10, MaxTotalBytes: 100}
	if _, err := readFiles(bytes.NewReader(buf.Bytes()), small); !errors.Is(err, workspace.ErrTooLarge) || !strings.Contains(err.Error(), "ok.txt") {
		t.Fatalf("over the file size limit: %v", err)
	}
}

// TestCollectedListing rebuilds a workdir from a listing and the tar of
// the files the run wrote.
func TestCollectedListing(t *testing.T) {
	input := files("same.txt", "same", "gone.txt", "bye", "edited.txt", "old")
	var buf bytes.Buffer
	buf.WriteString("./same.txt\x00./edited.txt\x00./new.txt\x00./epoch.txt\x00./.git/config\x00./bad\nname.txt\x00./\x1b[2Jclear.txt\x00\x00")
	tw := tar.NewWriter(&buf)
	for _, f := range files("./edited.txt", "new", "./new.txt", "fresh", "./bad\nname.txt", "x", "./\x1b[2Jclear.txt", "y") {
		if err := tw.WriteHeader(&tar.Header{Typeflag: tar.TypeReg, Name: f.Path, Mode: 0o644, Size: int64(len(f.Data))}); err != nil {
			t.Fatal(err)
		}
		tw.Write(f.Data)
	}
	tw.Close()
	got, unwritable, err := collected(buf.Bytes(), input, workspace.DefaultLimits)
	if err != nil {
		t.Fatal(err)
	}
	if p := paths(got); !slices.Equal(p, []string{"edited.txt", "new.txt", "same.txt"}) || string(got[0].Data) != "new" || string(got[2].Data) != "same" {
		t.Fatalf("files %q", p)
	}
	if want := []string{"\x1b[2Jclear.txt", "bad\nname.txt"}; !slices.Equal(unwritable, want) {
		t.Errorf("names left out as unwritable %q, want %q", unwritable, want)
	}
	if _, _, err := collected([]byte("./a.txt\x00./b"), nil, workspace.DefaultLimits); err == nil {
		t.Fatal("a listing without its end was read")
	}
	if _, _, err := collected([]byte("./a\x00./b\x00./c\x00\x00"), nil, workspace.Limits{MaxFiles: 2}); !errors.Is(err, workspace.ErrTooLarge) {
		t.Fatalf("too many files listed: %v", err)
	}
}

// TestDepsLinkIsTheInstalls: a run with a deps link sees the install's
// directory at that path of its workdir too, read-only, in place of the
// workspace's own files there; the files it writes elsewhere come back,
// and nothing under the link does (the install's files are newer than
// the workspace's, and would otherwise come back as written by the run).
func TestDepsLinkIsTheInstalls(t *testing.T) {
	deps, err := os.MkdirTemp("", "autocoder-depslink-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(deps) })
	if err := os.MkdirAll(filepath.Join(deps, "node_modules", "pkg"), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(deps, "node_modules", "pkg", "index.js"), []byte("installed\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	// The sandbox's user must reach it, as the worker's deps directory.
	if err := os.Chmod(deps, 0o755); err != nil {
		t.Fatal(err)
	}
	script := `cat node_modules/pkg/index.js /deps/node_modules/pkg/index.js; ls node_modules
if touch node_modules/w 2>/dev/null; then echo writable; fi
echo new > b.txt`
	for _, be := range backends {
		t.Run(be, func(t *testing.T) {
			r := testRunner(t, be, 0)
			res := run(t, r, Spec{Profile: "python", Deps: deps, DepsLink: "node_modules", Collect: true,
				Files: files("a.txt", "a", "node_modules/stale.js", "stale"), Cmd: sh(script)})
			if res.ExitCode != 0 || res.FilesErr != nil {
				t.Fatalf("exit %d, files error %v, stderr %q", res.ExitCode, res.FilesErr, res.Stderr)
			}
			if want := "installed\ninstalled\npkg\n"; res.Stdout != want {
				t.Errorf("stdout %q, want %q", res.Stdout, want)
			}
			if got, want := paths(res.Files), []string{"a.txt", "b.txt"}; !slices.Equal(got, want) {
				t.Errorf("files %q, want %q", got, want)
			}
		})
	}
	// What the install made a symbolic link would show what it points to.
	if err := os.Symlink("/etc", filepath.Join(deps, "etc")); err != nil {
		t.Fatal(err)
	}
	for _, link := range []string{"../x", "etc", "missing"} {
		_, err = prepare(newProfileSet(testProfiles()), nil, Spec{Profile: "python", Deps: deps, DepsLink: link, Cmd: sh("true")})
		if !errors.Is(err, ErrInvalidSpec) {
			t.Errorf("deps link %q: %v, want ErrInvalidSpec", link, err)
		}
	}
}
