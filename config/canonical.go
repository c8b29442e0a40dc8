package config

import "encoding/json"

// Canonical is v's configuration without where it was written: two parts
// of two files that say the same thing have the same Canonical, wherever
// their lines are. Reloads compare with it to keep what did not change.
func Canonical(v any) string {
	b, err := json.Marshal(v)
	if err != nil {
		return "!" + err.Error()
	}
	var tree any
	if err := json.Unmarshal(b, &tree); err != nil {
		return "!" + err.Error()
	}
	b, _ = json.Marshal(dropPos(tree))
	return string(b)
}

// dropPos removes every "pos" member, at any depth.
func dropPos(v any) any {
	switch t := v.(type) {
	case map[string]any:
		delete(t, "pos")
		for k, e := range t {
			t[k] = dropPos(e)
		}
	case []any:
		for i, e := range t {
			t[i] = dropPos(e)
		}
	}
	return v
}

// Identity names a virtual server by the services it makes: its
// address and port, fwmark or group, with protocol and family.
func (vs *VirtualServer) Identity() string {
	return Canonical(struct {
		A  any
		F  uint32
		G  string
		Fa Family
		P  Protocol
	}{vs.Addr, vs.FWMark, vs.Group, vs.Family, vs.Protocol})
}
