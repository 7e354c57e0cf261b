package node

import "testing"

// TestDeclaresPackages: only a package.json that names a package (of any
// kind npm installs) asks for an install; one npm cannot read does too,
// for npm to say why.
func TestDeclaresPackages(t *testing.T) {
	for _, c := range []struct {
		text string
		want bool
	}{
		{`{"name": "app", "scripts": {"test": "node --test"}}`, false},
		{`{"dependencies": {}, "devDependencies": {}}`, false},
		{`{"dependencies": {"left-pad": "1.3.0"}}`, true},
		{`{"devDependencies": {"mocha": "10.4.0"}}`, true},
		{`{"optionalDependencies": {"fsevents": "2.3.3"}}`, true},
		{`{"peerDependencies": {"react": "18.3.1"}}`, true},
		{`{"dependencies": `, true},
	} {
		if got := declaresPackages(map[string][]byte{"package.json": []byte(c.text)}); got != c.want {
			t.Errorf("%s: %v, want %v", c.text, got, c.want)
		}
	}
}
