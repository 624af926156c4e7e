package healthcheck

// judge counts a round's outcome toward flipping t's verdict, HAProxy's
// rise and fall: Fall failures in a row turn a healthy target unhealthy,
// Rise passes in a row turn it healthy again, and a round that agrees with
// the verdict starts the count again. It reports whether the verdict
// flipped.
func (t *target) judge(ok bool) (flipped bool) {
	if ok == t.healthy {
		t.streak = 0
		return false
	}
	t.streak++
	if (t.healthy && t.streak >= t.Spec.Fall) || (!t.healthy && t.streak >= t.Spec.Rise) {
		t.healthy, t.streak = !t.healthy, 0
		return true
	}
	return false
}
