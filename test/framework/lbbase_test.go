package framework

import "testing"

// Beds started side by side get load-balancer blocks no other bed holds:
// twenty beds of three members, sixty of the two hundred octets, drawn at
// random would all but surely overlap.
func TestClaimLBBaseGivesEveryBedBlocksOfItsOwn(t *testing.T) {
	held := map[int]bool{}
	for range 20 {
		base := ClaimLBBase(t, 3)
		for b := base; b < base+3; b++ {
			if held[b] {
				t.Fatalf("block 127.%d.0.0/16 given twice", b)
			}
			held[b] = true
		}
	}
}

// A bed of no members needs no block, and gets a base all the same.
func TestClaimLBBaseOfNoMembers(t *testing.T) {
	if base := ClaimLBBase(t, 0); base < 16 {
		t.Errorf("base %d, want one of 16 to 215", base)
	}
}
