package config

import "testing"

// TestPersistenceEngine: keepalived (ipvswrapper.c ipvs_set_srule) sends
// persistence_engine only with a persistence timeout: alone it makes no
// persistent service; with persistence_timeout or persistence_granularity
// (which sets timeout 360), before or after it, it is the service's.
func TestPersistenceEngine(t *testing.T) {
	tests := []struct {
		name, lines string
		want        *Persistence
	}{
		{"alone", " persistence_engine sip", nil},
		{"with a timeout after it", " persistence_engine sip\n persistence_timeout 50", &Persistence{Timeout: 50e9, Engine: "sip"}},
		{"with a timeout before it", " persistence_timeout 50\n persistence_engine sip", &Persistence{Timeout: 50e9, Engine: "sip"}},
		{"with a granularity", " persistence_granularity 255.255.255.0\n persistence_engine sip", &Persistence{Timeout: 360e9, Granularity: "255.255.255.0", Engine: "sip"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			cfg := mustParse(t, vsrv(tt.lines), Options{})
			got := cfg.VirtualServers[0].Persistence
			if (got == nil) != (tt.want == nil) || got != nil && *got != *tt.want {
				t.Errorf("persistence %+v, want %+v", got, tt.want)
			}
		})
	}
}
