package bytesize

import "testing"

func TestParse(t *testing.T) {
	for in, want := range map[string]int64{
		"0": 0, "1048576": 1 << 20, "64MiB": 64 << 20, "64 MiB": 64 << 20, "512KiB": 512 << 10,
		"2G": 2 << 30, "10MB": 10e6, "7B": 7, " 3M ": 3 << 20,
	} {
		got, err := Parse(in)
		if err != nil || got != want {
			t.Errorf("Parse(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"", "-1", "1.5MiB", "MiB", "ten", "1TiB", "99999999999G"} {
		if n, err := Parse(in); err == nil {
			t.Errorf("Parse(%q) = %d, want an error", in, n)
		}
	}
}

func TestFormat(t *testing.T) {
	for n, want := range map[int64]string{
		900: "900 B", 64 << 20: "64 MiB", 3 << 19: "1.5 MiB", 4 << 30: "4 GiB", 1023: "1023 B", 150 << 20: "150 MiB",
	} {
		if got := Format(n); got != want {
			t.Errorf("Format(%d) = %q, want %q", n, got, want)
		}
	}
}
