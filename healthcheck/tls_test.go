package healthcheck

import (
	"crypto/ecdsa"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"encoding/pem"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/directord/directord/config"
	"github.com/directord/directord/internal/testcert"
)

// clientFiles writes a client certificate and its key as an operator's
// SSL block names them; with a password, the key is encrypted as
// OpenSSL's traditional format does.
func clientFiles(t *testing.T, password string) (cert tls.Certificate, certFile, keyFile string) {
	t.Helper()
	cert, err := testcert.Client("director.test")
	if err != nil {
		t.Fatal(err)
	}
	certPEM, keyPEM, err := testcert.PEM(cert)
	if err != nil {
		t.Fatal(err)
	}
	if password != "" {
		der, err := x509.MarshalECPrivateKey(cert.PrivateKey.(*ecdsa.PrivateKey))
		if err != nil {
			t.Fatal(err)
		}
		//lint:ignore SA1019 the format operators' keys are in
		b, err := x509.EncryptPEMBlock(rand.Reader, "EC PRIVATE KEY", der, []byte(password), x509.PEMCipherAES256)
		if err != nil {
			t.Fatal(err)
		}
		keyPEM = pem.EncodeToMemory(b)
	}
	dir := t.TempDir()
	certFile, keyFile = filepath.Join(dir, "client.pem"), filepath.Join(dir, "client.key")
	os.WriteFile(certFile, certPEM, 0o644)
	os.WriteFile(keyFile, keyPEM, 0o600)
	return cert, certFile, keyFile
}

// sslConfig is a configuration of one SSL_GET checker of /ok on s, with
// the SSL block ssl.
func sslConfig(s *testServer, ssl *config.SSL) *config.Config {
	c, rs := httpChecker("SSL_GET", s, url("/ok"))
	c.Retry, c.DelayLoop = 1, 1
	c.ConnectTimeout = 2 * time.Second // a handshake under -race on a loaded machine: not a timing test
	rs.Checkers = []*config.Checker{c}
	return &config.Config{SSL: ssl, VirtualServers: []*config.VirtualServer{{RealServers: []*config.RealServer{rs}}}}
}

// TestSSLClientCertificate: the SSL block's certificate and key are
// offered to a real server that requires a client certificate, as
// keepalived's SSL context offers them: whatever CAs the server's request
// names, and with an encrypted key read with the block's password.
func TestSSLClientCertificate(t *testing.T) {
	cert, certFile, keyFile := clientFiles(t, "")
	_, encCert, encKey := clientFiles(t, "s3cret")
	trusted := x509.NewCertPool()
	leaf, _ := x509.ParseCertificate(cert.Certificate[0])
	trusted.AddCert(leaf)
	other, _ := testcert.Client("other.test")
	otherPool := x509.NewCertPool()
	otherLeaf, _ := x509.ParseCertificate(other.Certificate[0])
	otherPool.AddCert(otherLeaf)

	verifying := newServerWith(t, func(c *tls.Config) {
		c.ClientAuth, c.ClientCAs = tls.RequireAndVerifyClientCert, trusted
	})
	// Requires a certificate, and names an unrelated CA in its request.
	anyCert := newServerWith(t, func(c *tls.Config) {
		c.ClientAuth, c.ClientCAs = tls.RequireAnyClientCert, otherPool
	})
	tests := []struct {
		name string
		s    *testServer
		ssl  *config.SSL
		want Outcome
	}{
		{"certificate and key", verifying, &config.SSL{Certificate: certFile, Key: keyFile}, Up},
		{"encrypted key with password", anyCert, &config.SSL{Certificate: encCert, Key: encKey, Password: "s3cret"}, Up},
		{"other CA named in the request", anyCert, &config.SSL{Certificate: certFile, Key: keyFile}, Up},
		{"no SSL block", verifying, nil, Down},
		{"certificate without key", verifying, &config.SSL{Certificate: certFile}, Down},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := newRunner(t, sslConfig(tt.s, tt.ssl), func(Event) {}, nil)
			res := probe(t, r.Checks()[0].Prober)
			if res.Outcome != tt.want {
				t.Errorf("%s %q, want %s", res.Outcome, res.Reason, tt.want)
			}
		})
	}
}

// TestSSLClientCertificateErrors: a certificate or key that cannot be
// used is an error naming the SSL block's file:line, as -t reports it.
func TestSSLClientCertificateErrors(t *testing.T) {
	_, certFile, keyFile := clientFiles(t, "")
	_, encCert, encKey := clientFiles(t, "s3cret")
	_, otherCert, _ := clientFiles(t, "")
	pkcs8 := filepath.Join(t.TempDir(), "pkcs8.key")
	os.WriteFile(pkcs8, pem.EncodeToMemory(&pem.Block{Type: "ENCRYPTED PRIVATE KEY", Bytes: []byte{1}}), 0o600)
	pos := config.Pos{File: "keepalived.conf", Line: 3}
	tests := []struct {
		name string
		ssl  config.SSL
		want string
	}{
		{"missing certificate", config.SSL{Certificate: "/nonexistent.pem", Key: keyFile}, "keepalived.conf:3: error: SSL: certificate: open /nonexistent.pem"},
		{"encrypted key, no password", config.SSL{Certificate: encCert, Key: encKey}, "has no password"},
		{"wrong password", config.SSL{Certificate: encCert, Key: encKey, Password: "guess"}, "password incorrect"},
		{"encrypted PKCS #8", config.SSL{Certificate: certFile, Key: pkcs8}, "not supported by directord"},
		{"key of another certificate", config.SSL{Certificate: otherCert, Key: keyFile}, "does not match"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			tt.ssl.Pos = pos
			cert, diags := ClientCertificate(&tt.ssl)
			if cert != nil || len(diags) != 1 || !strings.Contains(diags[0].String(), tt.want) || !strings.HasPrefix(diags[0].String(), "keepalived.conf:3: error: SSL: ") {
				t.Errorf("%v, want keepalived.conf:3: error: SSL: ... %s", diags, tt.want)
			}
		})
	}
}

// TestSSLServerGroups: a real server that allows one elliptic curve
// only, P-384 or P-521 (a common hardening: ssl_ecdh_curve secp384r1),
// passes, as it does with keepalived's OpenSSL client; TLS 1.2 and 1.3.
func TestSSLServerGroups(t *testing.T) {
	for _, curve := range []tls.CurveID{tls.CurveP384, tls.CurveP521} {
		for _, v := range []uint16{tls.VersionTLS12, tls.VersionTLS13} {
			t.Run(curve.String()+"/"+tls.VersionName(v), func(t *testing.T) {
				s := newServerWith(t, func(c *tls.Config) {
					c.CurvePreferences, c.MinVersion, c.MaxVersion = []tls.CurveID{curve}, v, v
				})
				c, rs := httpChecker("SSL_GET", s, url("/ok"))
				// What is tested is the groups offered, not the time: a
				// P-521 handshake on both sides under -race, on a loaded
				// machine, takes longer than the helper's 500 ms.
				c.ConnectTimeout = 5 * time.Second
				p := mustHTTP(t, c, rs, "")
				if res := probe(t, p); res.Outcome != Up {
					t.Errorf("%s %q", res.Outcome, res.Reason)
				}
			})
		}
	}
}
