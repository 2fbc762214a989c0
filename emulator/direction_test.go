package emulator

import "testing"

func TestDirectionRoundTrip(t *testing.T) {
	for _, d := range []Direction{AtoB, BtoA, Both} {
		t.Run(d.String(), func(t *testing.T) {
			got, err := ParseDirection(d.String())
			if err != nil || got != d {
				t.Fatalf("ParseDirection(%q) = %v, %v", d.String(), got, err)
			}
			if !d.Valid() || d.Reverse().Reverse() != d {
				t.Fatalf("%v: Valid %v, Reverse twice %v", d, d.Valid(), d.Reverse().Reverse())
			}
		})
	}
	if d, err := ParseDirection(""); err != nil || d != Both {
		t.Errorf(`ParseDirection("") = %v, %v; want both`, d, err)
	}
	if _, err := ParseDirection("a<b"); err == nil {
		t.Error("ParseDirection(a<b) accepted")
	}
	if Direction(3).Valid() || Direction(-1).Valid() {
		t.Error("out-of-range directions are valid")
	}
	if !Both.Includes(AtoB) || !AtoB.Includes(AtoB) || AtoB.Includes(BtoA) {
		t.Error("Includes")
	}
}
