package ipvs

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"hash"
)

// Digest is a short fingerprint of the programmed state of the services
// keys of t, in that order: each service's key, scheduler, user flags,
// persistence (timeout, netmask, engine) and destinations with their
// method, weight, thresholds and tunnel settings, or that it is missing.
// Counters and connection counts are left out, so two directors that
// hold the same table have the same digest, whatever their traffic.
//
// The destinations of an Ordered (mh) service are taken in their list
// order, which decides where the kernel's Maglev table sends a flow (Diff
// makes it CanonicalOrder on every director); those of other services by
// address and port, since directord leaves their order to history.
//
// It is "sha256:" and the first 16 hex digits (64 bits) of the SHA-256
// of the text it hashes.
func Digest(t Table, keys []ServiceKey) string {
	h := sha256.New()
	for _, k := range keys {
		writeService(h, k, t[k])
	}
	return "sha256:" + hex.EncodeToString(h.Sum(nil)[:8])
}

func writeService(h hash.Hash, k ServiceKey, vs *VirtualService) {
	if vs == nil {
		fmt.Fprintf(h, "service %s missing\n", k)
		return
	}
	s := &vs.Service
	fmt.Fprintf(h, "service %s %s flags %#x timeout %d netmask %d pe %q\n", k, s.Scheduler,
		uint32(s.Flags&userFlags), s.Timeout.Milliseconds()/1000, fullMask(s.Family, s.Netmask), s.PersistenceEngine)
	ds := vs.SortedDests()
	if Ordered(s) {
		ds = vs.OrderedDests()
	}
	for _, d := range ds {
		fwd := d.Forward
		if fwd == Local {
			fwd = Masquerade // as sameDest takes it
		}
		fmt.Fprintf(h, " dest %s %s weight %d thresholds %d-%d", d.AddrPort(), fwd, d.Weight, d.LowerThreshold, d.UpperThreshold)
		if fwd == Tunnel {
			fmt.Fprintf(h, " tunnel %d/%d/%d", d.TunnelType, d.TunnelPort, d.TunnelFlags)
		}
		fmt.Fprintln(h)
	}
}
