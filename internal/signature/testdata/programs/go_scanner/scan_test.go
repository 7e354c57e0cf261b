package scanner

import "testing"

func TestCountVowels(t *testing.T) {
	if CountVowels("banana") != 3 {
		t.Fail()
	}
}
