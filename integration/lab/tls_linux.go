package lab

import (
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"time"

	"github.com/directord/directord/internal/nstest"
)

// ServerName is the name in the real servers' certificate.
const ServerName = "www.lab.example"

// The real servers' files in the lab's folder.
const (
	certFile   = "cert.pem"
	keyFile    = "key.pem"
	ticketFile = "ticket.key"
)

// curves: X25519 alone keeps handshakes cheap on the guest's one CPU.
var curves = []tls.CurveID{tls.X25519}

// newTLS makes a self-signed certificate that every real server presents
// (they serve one site) and a session ticket key they share, as a pool
// does, so that the client resumes its sessions on any of them (full
// handshakes would make the client the lab's bottleneck in the guest). It
// writes them into dir for the real servers and returns the client's
// configuration, which trusts the certificate.
func newTLS(t nstest.TB, dir string) *tls.Config {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	ips := []net.IP{VIP.AsSlice()}
	for _, a := range RealAddrs {
		ips = append(ips, a.AsSlice())
	}
	now := time.Now()
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(now.UnixNano()),
		Subject:               pkix.Name{CommonName: ServerName},
		DNSNames:              []string{ServerName},
		IPAddresses:           ips,
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(24 * time.Hour),
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
		ExtKeyUsage:           []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	keyDER, err := x509.MarshalECPrivateKey(key)
	if err != nil {
		t.Fatal(err)
	}
	ticket := make([]byte, 32)
	if _, err := rand.Read(ticket); err != nil {
		t.Fatal(err)
	}
	for name, b := range map[string][]byte{
		certFile:   pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		keyFile:    pem.EncodeToMemory(&pem.Block{Type: "EC PRIVATE KEY", Bytes: keyDER}),
		ticketFile: ticket,
	} {
		if err := os.WriteFile(filepath.Join(dir, name), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	leaf, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	roots := x509.NewCertPool()
	roots.AddCert(leaf)
	return &tls.Config{
		RootCAs:            roots,
		ServerName:         ServerName,
		NextProtos:         []string{"http/1.1"},
		CurvePreferences:   curves,
		ClientSessionCache: tls.NewLRUClientSessionCache(1024),
	}
}

// serverTLS reads what newTLS wrote into dir, for a real server.
func serverTLS(dir string) (*tls.Config, error) {
	cert, err := tls.LoadX509KeyPair(filepath.Join(dir, certFile), filepath.Join(dir, keyFile))
	if err != nil {
		return nil, err
	}
	ticket, err := os.ReadFile(filepath.Join(dir, ticketFile))
	if err != nil {
		return nil, err
	}
	if len(ticket) != 32 {
		return nil, fmt.Errorf("%s: %d bytes, want 32", ticketFile, len(ticket))
	}
	c := &tls.Config{
		Certificates:     []tls.Certificate{cert},
		NextProtos:       []string{"http/1.1"},
		CurvePreferences: curves,
	}
	c.SetSessionTicketKeys([][32]byte{[32]byte(ticket)})
	return c, nil
}
