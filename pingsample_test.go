package hymn

import "testing"

// samplePairs draws the number asked for, distinct, never a host to
// itself, the same for the same seed; with few hosts, every ordered pair.
func TestSamplePairs(t *testing.T) {
	a, b := samplePairs(10000, 1000, 7), samplePairs(10000, 1000, 7)
	if len(a) != 1000 {
		t.Fatalf("%d pairs, want 1000", len(a))
	}
	seen := map[[2]int]bool{}
	for i, p := range a {
		if p[0] == p[1] || p[0] < 0 || p[1] < 0 || p[0] >= 10000 || p[1] >= 10000 {
			t.Fatalf("pair %v", p)
		}
		if seen[p] {
			t.Fatalf("pair %v twice", p)
		}
		seen[p] = true
		if b[i] != p {
			t.Fatalf("seed 7 drew %v then %v at %d", p, b[i], i)
		}
	}
	if c := samplePairs(10000, 1000, 8); c[0] == a[0] && c[1] == a[1] && c[2] == a[2] {
		t.Error("seeds 7 and 8 drew the same pairs")
	}
	if all := samplePairs(4, 1000, 1); len(all) != 12 {
		t.Errorf("4 hosts: %d pairs, want all 12", len(all))
	}
	// Every host can be drawn as either end: 3 hosts, 5 of 6 pairs.
	ends := map[int]bool{}
	for _, p := range samplePairs(3, 5, 3) {
		ends[p[0]], ends[p[1]] = true, true
	}
	if len(ends) != 3 {
		t.Errorf("3 hosts: ends %v", ends)
	}
}
