package testcert

import (
	"crypto/x509"
	"testing"
)

// TestServerVerifies: the certificate verifies against itself as the root
// for its name and for server authentication, and not for another name.
func TestServerVerifies(t *testing.T) {
	cert, err := Server("farm.test")
	if err != nil {
		t.Fatal(err)
	}
	leaf, err := x509.ParseCertificate(cert.Certificate[0])
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "farm.test",
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth}}); err != nil {
		t.Errorf("verify: %v", err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: "other.test"}); err == nil {
		t.Error("verified for another name")
	}
}
