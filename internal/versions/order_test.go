package versions

import "testing"

func TestNewestPrefersReleases(t *testing.T) {
	for _, c := range []struct {
		name string
		vs   []string
		pre  scheme
		want string
	}{
		{"semver numbers", []string{"v0.9.0", "v0.10.0", "v0.2.1"}, semverPre, "v0.10.0"},
		{"semver release over newer pre-release", []string{"1.4.0", "2.0.0-beta.1", "1.3.9"}, semverPre, "1.4.0"},
		{"semver only pre-releases", []string{"1.0.0-rc.2", "1.0.0-rc.10", "1.0.0-alpha"}, semverPre, "1.0.0-rc.10"},
		{"semver build metadata is no pre-release", []string{"v2.0.0+incompatible", "v1.9.0"}, semverPre, "v2.0.0+incompatible"},
		{"pep440 candidates and dev", []string{"2.0.1", "2.1.0rc1", "2.1.0.dev3", "2.1.0a1", "1.99"}, pythonPre, "2.0.1"},
		{"pep440 post release after its release", []string{"1.0", "1.0.post1"}, pythonPre, "1.0.post1"},
		{"pep440 only pre-releases", []string{"3.0b1", "3.0a2", "3.0rc1"}, pythonPre, "3.0rc1"},
		{"maven qualifiers", []string{"1.9", "1.10.0", "2.0.0-M1", "2.0.0-RC1", "2.1-SNAPSHOT", "2.0-beta-2"}, mavenPre, "1.10.0"},
		{"maven flavours are releases", []string{"33.3.1-android", "33.3.1-jre", "33.2.0-jre", "34.0.0-rc1"}, mavenPre, "33.3.1-jre"},
		{"none", nil, semverPre, ""},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := newest(c.vs, c.pre); got != c.want {
				t.Errorf("newest(%q) = %q, want %q", c.vs, got, c.want)
			}
		})
	}
}
