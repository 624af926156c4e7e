package dnsprovider

import "fmt"

// Batch packs groups of changes into as few batches as possible, in order,
// without splitting a group (the changes to one name must be applied
// atomically) and without any batch exceeding limits: cost returns a
// change's cost in each dimension limits bounds (records, characters,
// bytes, …). A group whose own cost exceeds a limit is an error wrapping
// ErrTooLarge.
func Batch(groups [][]Change, limits []int, cost func(Change) []int) ([][]Change, error) {
	var batches [][]Change
	var cur []Change
	used := make([]int, len(limits))
	for _, g := range groups {
		gc := make([]int, len(limits))
		for _, c := range g {
			for i, v := range cost(c) {
				gc[i] += v
			}
		}
		for i, v := range gc {
			if v > limits[i] {
				return nil, fmt.Errorf("batching changes to %s: cost %d exceeds limit %d: %w", g[0].Group, v, limits[i], ErrTooLarge)
			}
		}
		fits := true
		for i := range limits {
			if used[i]+gc[i] > limits[i] {
				fits = false
			}
		}
		if !fits {
			batches = append(batches, cur)
			cur = nil
			clear(used)
		}
		cur = append(cur, g...)
		for i := range limits {
			used[i] += gc[i]
		}
	}
	if len(cur) > 0 {
		batches = append(batches, cur)
	}
	return batches, nil
}
