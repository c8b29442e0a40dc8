package vrrp

import "github.com/directord/directord/config"

// track_file: a file holding a number that moves an instance's priority,
// as keepalived 2.2.7's trackers/track_file.c and vrrp_track.c have it.
// Pure: a value in, a priority change or a fault out.

// FileStatus is what a tracked file's value does to one instance
// tracking it with weight and reverse: with weight 0, a nonzero value
// (zero, when reversed) is a fault; otherwise value * weight (negated
// when reversed) is added to the priority, a result of -254 or less being
// a fault and one above 253 counting as 253.
func FileStatus(value int64, weight int, reverse bool) (delta int, fault bool) {
	if weight == 0 {
		return 0, (value != 0) != reverse
	}
	s := value * int64(weight)
	if reverse {
		s = -s
	}
	switch {
	case s <= -254:
		return 0, true
	case s > 253:
		return 253, false
	}
	return int(s), false
}

// fileTracked turns a file's status into the Tracked entries Effective
// sums: a fault is a weight 0 entry that is down, a delta an entry whose
// weight applies.
func fileTracked(value int64, weight int, reverse bool) Tracked {
	d, fault := FileStatus(value, weight, reverse)
	switch {
	case fault:
		return Tracked{Weight: 0, Good: false}
	case d > 0:
		return Tracked{Weight: d, Good: true}
	case d < 0:
		return Tracked{Weight: d, Good: false}
	}
	return Tracked{Weight: 1, Good: false} // adds nothing
}

// FileUses are the track_file entries of an instance in its sync group
// g (nil if none), as keepalived's add_obj_to_track_file merges them: the
// group's entries follow the instance's, and one for a file the instance
// tracks already gives that entry its weight, unless the instance's
// weight is 0.
func FileUses(in *config.Instance, g *config.SyncGroup) []config.TrackFileUse {
	out := append([]config.TrackFileUse(nil), in.TrackFiles...)
	if g == nil {
		return out
	}
next:
	for _, u := range g.TrackFiles {
		for i := range out {
			if out[i].Name == u.Name {
				if out[i].Weight != 0 {
					out[i].Weight, out[i].Reverse = u.Weight, u.Reverse
				}
				continue next
			}
		}
		out = append(out, u)
	}
	return out
}

// ParseFileValue reads a track file's contents as keepalived does: its
// first 127 bytes through strtol(buf, NULL, 0), so leading blanks, a sign,
// 0x for hex and a leading 0 for octal, anything after the number
// ignored, and no number read as 0. ok is false for a number out of
// range (keepalived: "Invalid number ... - ignoring", the previous value
// kept).
func ParseFileValue(b []byte) (v int64, ok bool) {
	if len(b) > 127 {
		b = b[:127]
	}
	i := 0
	for i < len(b) && (b[i] == ' ' || b[i] >= '\t' && b[i] <= '\r') {
		i++
	}
	neg := false
	if i < len(b) && (b[i] == '+' || b[i] == '-') {
		neg = b[i] == '-'
		i++
	}
	base := int64(10)
	if i < len(b) && b[i] == '0' {
		base = 8
		if i+2 < len(b) && (b[i+1] == 'x' || b[i+1] == 'X') && digit(b[i+2], 16) >= 0 {
			base = 16
			i += 2
		}
	}
	var n int64
	for ; i < len(b); i++ {
		d := digit(b[i], base)
		if d < 0 {
			break
		}
		n = n*base + d
		if n > 1<<40 { // far past int32: strtol's ERANGE or keepalived's range check
			return 0, false
		}
	}
	if neg {
		n = -n
	}
	if n < -1<<31 || n > 1<<31 {
		return 0, false
	}
	return n, true
}

func digit(c byte, base int64) int64 {
	var d int64
	switch {
	case c >= '0' && c <= '9':
		d = int64(c - '0')
	case c >= 'a' && c <= 'f':
		d = int64(c-'a') + 10
	case c >= 'A' && c <= 'F':
		d = int64(c-'A') + 10
	default:
		return -1
	}
	if d >= base {
		return -1
	}
	return d
}
