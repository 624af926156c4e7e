// Package stablehash holds the hashes kfed computes alike in every process
// and version: the health checkers' panels (rendezvous over checkers) and
// the edge's draw for a client subnet (rendezvous over clusters) depend on
// every replica, agent and controller agreeing on them, so they may not
// change. hash/fnv would allocate for each string; hash/maphash is seeded
// per process.
package stablehash

// String is the 64-bit FNV-1a hash of s. It allocates nothing.
func String(s string) uint64 {
	h := uint64(14695981039346656037)
	for i := 0; i < len(s); i++ {
		h ^= uint64(s[i])
		h *= 1099511628211
	}
	return h
}

// Mix is SplitMix64's finaliser: a bijection that spreads every input bit
// over the output, so that Mix(a ^ b) is a fair score of the pair.
func Mix(x uint64) uint64 {
	x ^= x >> 30
	x *= 0xbf58476d1ce4e5b9
	x ^= x >> 27
	x *= 0x94d049bb133111eb
	return x ^ x>>31
}
