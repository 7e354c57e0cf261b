package workspace

import (
	"bytes"
	"path"
	"sort"
	"strings"
)

// Git's repository discovery takes any directory on the way up from where
// it runs for a git directory when that directory passes is_git_directory
// (setup.c): a HEAD that validate_headref accepts, and "objects" and
// "refs" that access(X_OK) accepts, in the directory that its "commondir"
// file names when it has one. Such a directory's config is then obeyed,
// core.fsmonitor and hooks included, so a workspace holding one would run
// the model's commands at the user's next `git status`. The rule below is
// git's, with two differences that only ever refuse more: names are
// compared without case (the user's file system may fold it), and a
// commondir that points outside the workspace, or whose content is not
// known, counts as pointing at a repository.

// Git's names for the entries discovery looks at, in lower case, and as
// git spells them on disk.
const (
	gitHead      = "head"
	gitCommonDir = "commondir"
	gitObjects   = "objects"
	gitRefs      = "refs"
)

var gitSpelling = map[string]string{gitHead: "HEAD", gitCommonDir: gitCommonDir, gitObjects: gitObjects, gitRefs: gitRefs}

// headPrefixLen is how much of HEAD validate_headref reads.
const headPrefixLen = 255

// gitEntry is what the rule knows of one entry of a directory.
type gitEntry struct {
	dir    bool   // a directory (in a file set: the parent of some file)
	mode   uint32 // permission bits of a file
	size   int64
	lead   []byte // leading bytes of HEAD or commondir; nil when not known
	exists bool
}

// accessible is access(X_OK) as root sees it: any directory, a file with
// an execute bit.
func (e gitEntry) accessible() bool {
	return e.exists && (e.dir || e.mode&0o111 != 0)
}

// validHead is validate_headref: "ref:" and optional white space before
// "refs/", or an object name in hex. A file whose content is not known
// counts as valid unless it is empty.
func (e gitEntry) validHead() bool {
	if !e.exists || e.dir {
		return false
	}
	if e.lead == nil {
		return e.size > 0
	}
	b := e.lead
	if len(b) > headPrefixLen {
		b = b[:headPrefixLen]
	}
	if i := bytes.IndexByte(b, 0); i >= 0 {
		b = b[:i]
	}
	if ref, ok := bytes.CutPrefix(b, []byte("ref:")); ok {
		return bytes.HasPrefix(bytes.TrimLeft(ref, " \t\n\r\v\f"), []byte("refs/"))
	}
	return isHex(b, 40)
}

func isHex(b []byte, n int) bool {
	if len(b) < n {
		return false
	}
	for _, c := range b[:n] {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f' || 'A' <= c && c <= 'F') {
			return false
		}
	}
	return true
}

// gitView answers what the rule asks of a tree: the entry called name (one
// of the lower-case names above) in dir, a slash-separated path relative
// to the workspace root ("" is the root).
type gitView func(dir, name string) gitEntry

// isGitDir applies git's is_git_directory to dir in view.
func isGitDir(view gitView, dir string) bool {
	if !view(dir, gitHead).validHead() {
		return false
	}
	common := dir
	if cd := view(dir, gitCommonDir); cd.exists {
		target, ok := commonDir(dir, cd)
		if !ok {
			return true
		}
		common = target
	}
	return view(common, gitObjects).accessible() && view(common, gitRefs).accessible()
}

// commonDir resolves a commondir file as get_common_dir does: trailing
// newlines dropped, relative to dir. It says false when the target cannot
// be known within the workspace.
func commonDir(dir string, cd gitEntry) (string, bool) {
	if cd.dir || cd.lead == nil || int64(len(cd.lead)) < cd.size {
		return "", false
	}
	rel := strings.TrimRight(string(cd.lead), "\r\n")
	if rel == "" || strings.HasPrefix(rel, "/") || strings.ContainsRune(rel, 0) {
		return "", false
	}
	target := path.Join(dir, rel)
	if target == ".." || strings.HasPrefix(target, "../") {
		return "", false
	}
	if target == "." {
		target = ""
	}
	return target, true
}

// GitLead returns what Sized.Lead holds of a file with this path and
// content: the leading bytes of HEAD and commondir files, nil otherwise.
func GitLead(p string, data []byte) []byte {
	switch strings.ToLower(path.Base(p)) {
	case gitHead:
		return data[:min(len(data), headPrefixLen)]
	case gitCommonDir:
		return data
	}
	return nil
}

// gitTree indexes a file set for the rule by lower-case path: files and the
// directories above them.
type gitTree map[string]gitEntry

func newGitTree(files []Sized) gitTree {
	t := make(gitTree, len(files))
	for _, f := range files {
		p := strings.ToLower(f.Path)
		t[p] = gitEntry{mode: f.Mode, size: f.Size, lead: f.Lead, exists: true}
		for d := path.Dir(p); d != "."; d = path.Dir(d) {
			if t[d].dir {
				break
			}
			t[d] = gitEntry{dir: true, exists: true}
		}
	}
	return t
}

func (t gitTree) entry(dir, name string) gitEntry { return t[strings.ToLower(path.Join(dir, name))] }

// gitDirsTouched lists the directories, in the files' own case, where the
// files put one of the names discovery reads: only there can writing them
// make a git directory.
func gitDirsTouched(files []Sized) []string {
	seen := map[string]bool{}
	var dirs []string
	for _, f := range files {
		parts := strings.Split(f.Path, "/")
		for i, part := range parts {
			switch strings.ToLower(part) {
			case gitObjects, gitRefs:
			case gitHead, gitCommonDir:
				if i < len(parts)-1 {
					continue
				}
			default:
				continue
			}
			if dir := strings.Join(parts[:i], "/"); !seen[dir] {
				seen[dir] = true
				dirs = append(dirs, dir)
			}
		}
	}
	sort.Strings(dirs)
	return dirs
}

// GitDirectories lists, in order, the directories of a file set that git
// would take for a git directory ("" is the root).
func GitDirectories(files []Sized) []string {
	touched := gitDirsTouched(files)
	if len(touched) == 0 { // most workspaces: no tree to index
		return nil
	}
	t := newGitTree(files)
	var found []string
	for _, dir := range touched {
		if isGitDir(t.entry, dir) {
			found = append(found, dir)
		}
	}
	return found
}
