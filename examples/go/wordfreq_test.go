package wordfreq

import (
	"reflect"
	"testing"
)

func TestTopIgnoresCase(t *testing.T) {
	got := Top("The cat and the hat. THE end", 2)
	want := []Count{{"the", 3}, {"and", 1}}
	if !reflect.DeepEqual(got, want) {
		t.Errorf("Top = %v, want %v", got, want)
	}
}

func TestTopOfNothing(t *testing.T) {
	if got := Top("", 3); len(got) != 0 {
		t.Errorf("Top of no text = %v, want none", got)
	}
}
