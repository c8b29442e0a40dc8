package config

import (
	"strings"
	"testing"
)

func TestCanonicalIgnoresPositions(t *testing.T) {
	conf := `virtual_server 192.0.2.1 80 {
    protocol TCP
    real_server 10.0.0.1 80 {
        HTTP_GET {
            url {
                path /healthz
                status_code 200
            }
        }
    }
}
`
	parse := func(s string) *Config {
		cfg, diags := Parse("keepalived.conf", s, nil, Options{})
		if diags.HasErrors() {
			t.Fatal(diags.Errors())
		}
		return cfg
	}
	a, b := parse(conf), parse("\n\n# moved\n"+conf)
	if a.VirtualServers[0].Pos == b.VirtualServers[0].Pos {
		t.Fatal("the test wants two positions")
	}
	ca, cb := a.VirtualServers[0].RealServers[0].Checkers[0], b.VirtualServers[0].RealServers[0].Checkers[0]
	if Canonical(ca) != Canonical(cb) || a.VirtualServers[0].Identity() != b.VirtualServers[0].Identity() {
		t.Errorf("the same checker on other lines differs:\n%s\n%s", Canonical(ca), Canonical(cb))
	}
	c := parse(strings.Replace(conf, "/healthz", "/ready", 1)).VirtualServers[0].RealServers[0].Checkers[0]
	if Canonical(ca) == Canonical(c) {
		t.Error("a checker with another URL is the same")
	}
	if d := parse(strings.Replace(conf, "192.0.2.1 80", "192.0.2.1 81", 1)); d.VirtualServers[0].Identity() == a.VirtualServers[0].Identity() {
		t.Error("another port is the same virtual server")
	}
}
