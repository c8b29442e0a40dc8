package config

import (
	"runtime"
	"testing"

	"github.com/directord/directord/internal/testconf"
)

// BenchmarkLoadLarge parses and validates 1,000 virtual servers of 20 real
// servers each (20,000 SSL_GET checks). It reports, besides time and
// allocations, the heap the resolved model keeps (live-MB). make bench
// compares the same file against keepalived -t in the same run.
func BenchmarkLoadLarge(b *testing.B) {
	text := testconf.Large(1000, 20)
	fs := MapFS{"/k.conf": text}
	b.SetBytes(int64(len(text)))
	b.ReportAllocs()
	var cfg *Config
	for b.Loop() {
		var diags Diagnostics
		cfg, diags = Load("/k.conf", Options{FS: fs, Hostname: "h"})
		if diags.HasErrors() {
			b.Fatal(diags.Errors())
		}
	}
	b.StopTimer()
	var with, without runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&with)
	runtime.KeepAlive(cfg)
	cfg = nil
	runtime.GC()
	runtime.ReadMemStats(&without)
	b.ReportMetric(float64(with.HeapAlloc-min(with.HeapAlloc, without.HeapAlloc))/(1<<20), "live-MB")
}

// TestLargeConfig checks the generated benchmark configuration is what it
// claims: 1,000 virtual servers, 20,000 real servers, no errors.
func TestLargeConfig(t *testing.T) {
	cfg, diags := Parse("/k.conf", testconf.Large(1000, 20), nil, Options{})
	if diags.HasErrors() {
		t.Fatal(diags.Errors())
	}
	n := 0
	for _, vs := range cfg.VirtualServers {
		n += len(vs.RealServers)
	}
	if len(cfg.VirtualServers) != 1000 || n != 20000 {
		t.Fatalf("got %d virtual servers and %d real servers", len(cfg.VirtualServers), n)
	}
}
