package planner

import (
	"math"
	"math/bits"
)

// The planner compares shares exactly: a rounding error in a float could hand
// a replica to the wrong cluster and break house monotonicity. Every quantity
// it compares is a non-negative integer that fits in 64 bits (replica counts
// are at most math.MaxInt32, weights at most MaxWeight), so products of two of
// them fit in 128 bits.

// u128 is an unsigned 128-bit integer.
type u128 struct{ hi, lo uint64 }

// mul returns a·b.
func mul(a, b uint64) u128 {
	hi, lo := bits.Mul64(a, b)
	return u128{hi, lo}
}

// add returns x+y. The planner never needs more than 128 bits.
func (x u128) add(y u128) u128 {
	lo, carry := bits.Add64(x.lo, y.lo, 0)
	hi, _ := bits.Add64(x.hi, y.hi, carry)
	return u128{hi, lo}
}

// cmp returns -1, 0 or +1 as x is less than, equal to or greater than y.
func (x u128) cmp(y u128) int {
	switch {
	case x.hi < y.hi:
		return -1
	case x.hi > y.hi:
		return 1
	case x.lo < y.lo:
		return -1
	case x.lo > y.lo:
		return 1
	}
	return 0
}

// frac is the non-negative fraction num/den, den > 0. The planner uses it for
// points on its water level λ: a share of weight w reaches n replicas at λ = n/w.
type frac struct{ num, den uint64 }

// cmp compares two fractions exactly.
func (a frac) cmp(b frac) int { return mul(a.num, b.den).cmp(mul(b.num, a.den)) }

// floorTimes returns ⌊a·g⌋. Callers only ask for results that fit in 64 bits;
// anything larger saturates instead of panicking.
func (a frac) floorTimes(g uint64) uint64 {
	p := mul(a.num, g)
	if p.hi >= a.den {
		return math.MaxUint64
	}
	q, _ := bits.Div64(p.hi, p.lo, a.den)
	return q
}

func gcd(a, b uint64) uint64 {
	for b != 0 {
		a, b = b, a%b
	}
	return a
}
