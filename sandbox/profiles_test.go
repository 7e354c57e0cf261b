package sandbox

import (
	"testing"

	"github.com/autocoder/autocoder/internal/lang"
	"github.com/autocoder/autocoder/internal/lang/languages"
)

// testProfiles are the profiles of the named languages, or of all of them
// with no names.
func testProfiles(names ...string) []Profile {
	if len(names) == 0 {
		return ProfilesOf(languages.All())
	}
	var ls []lang.Language
	for _, n := range names {
		ls = append(ls, languages.MustLookup(n))
	}
	return ProfilesOf(ls)
}

// mustProfile is the named language's profile.
func mustProfile(t testing.TB, name string) Profile {
	t.Helper()
	l, err := languages.Lookup(name)
	if err != nil {
		t.Fatal(err)
	}
	return ProfileOf(l)
}
