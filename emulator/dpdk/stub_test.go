//go:build !dpdk

package dpdk

import (
	"errors"
	"testing"
)

func TestNotBuilt(t *testing.T) {
	if err := Init(Config{}); !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("Init without the tag: %v", err)
	}
	if _, err := Open("net_ring0", Options{}); !errors.Is(err, ErrNotBuilt) {
		t.Fatalf("Open: %v", err)
	}
}
