package vrrp

// Tracking: what vrrp_script, track_script and track_interface do to an
// instance's priority, as keepalived does it. Pure: results in, priority
// and fault out.

// Check is the rise/fall state of one tracked script: it turns bad after
// fall consecutive failures and good again after rise consecutive
// successes.
type Check struct {
	Rise, Fall int
	good       bool
	run        int // consecutive results against the current state
}

// NewCheck starts good, or bad when initFail (keepalived's init_fail).
func NewCheck(rise, fall int, initFail bool) *Check {
	return &Check{Rise: max(rise, 1), Fall: max(fall, 1), good: !initFail}
}

// Good reports the current state.
func (c *Check) Good() bool { return c.good }

// Result records one run and reports whether the state changed.
func (c *Check) Result(success bool) bool {
	if success == c.good {
		c.run = 0
		return false
	}
	c.run++
	need := c.Fall
	if success {
		need = c.Rise
	}
	if c.run < need {
		return false
	}
	c.good, c.run = success, 0
	return true
}

// Tracked is one tracked thing (a script or an interface) as an instance
// sees it.
type Tracked struct {
	Weight  int
	Reverse bool
	Good    bool
}

// Effective computes an instance's priority and fault from its configured
// priority and what it tracks: a weight 0 entry that is down (up, when
// reversed) puts the instance in fault; a positive weight is added while
// the entry is up, a negative one while it is down, negated when reversed
// (keepalived's weight_multiplier of -1: a reversed weight 10 takes 10
// from an instance whose interface is up, and nothing while it is down).
// The result stays within 1-254; the address owner (255) is not
// adjusted, but can still be put in fault.
func Effective(priority uint8, tracked []Tracked) (uint8, bool) {
	p := int(priority)
	fault := false
	for _, t := range tracked {
		if t.Weight == 0 {
			if t.Good == t.Reverse {
				fault = true
			}
			continue
		}
		if (t.Weight > 0) != t.Good {
			continue
		}
		if t.Reverse {
			p -= t.Weight
		} else {
			p += t.Weight
		}
	}
	if priority == 255 {
		return 255, fault
	}
	return uint8(min(max(p, 1), 254)), fault
}
