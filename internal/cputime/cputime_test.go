package cputime

import (
	"crypto/sha256"
	"testing"
)

// TestProcessGrowsWithWork: work between two readings shows in their difference, and
// the reading never goes back.
func TestProcessGrowsWithWork(t *testing.T) {
	before := Process(t)
	sum := sha256.Sum256(nil)
	for range 200_000 {
		sum = sha256.Sum256(sum[:])
	}
	after := Process(t)
	if after <= before {
		t.Fatalf("CPU time %v after hashing, %v before (sum %x)", after, before, sum[:2])
	}
}
