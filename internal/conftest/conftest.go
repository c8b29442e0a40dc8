// Package conftest reads configurations in tests.
package conftest

import (
	"testing"

	"github.com/directord/directord/config"
)

// Parse reads a configuration for a test, which fails on any error.
func Parse(t testing.TB, text string) *config.Config {
	t.Helper()
	cfg, diags := config.Parse("keepalived.conf", text, nil, config.Options{})
	for _, d := range diags {
		if d.Severity == config.Error {
			t.Fatalf("config: %s", d)
		}
	}
	return cfg
}
