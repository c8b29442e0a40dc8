package config

import (
	"reflect"
	"testing"
	"time"
)

// differing returns a copy of v (a struct) with its field i set to a
// value other than the one v has, for each kind a URL or HTTPCheck
// field has.
func differing(t *testing.T, v reflect.Value, i int) reflect.Value {
	t.Helper()
	c := reflect.New(v.Type()).Elem()
	c.Set(v)
	f := c.Field(i)
	switch {
	case f.Type() == reflect.TypeOf(time.Duration(0)):
		f.SetInt(int64(f.Interface().(time.Duration) + time.Second))
	case f.Kind() == reflect.String:
		f.SetString(f.String() + "x")
	case f.Kind() == reflect.Bool:
		f.SetBool(!f.Bool())
	case f.Kind() == reflect.Int:
		f.SetInt(f.Int() + 1)
	case f.Kind() == reflect.Pointer && f.Type().Elem().Kind() == reflect.Int:
		n := 3
		if !f.IsNil() {
			n = int(f.Elem().Int()) + 1
		}
		f.Set(reflect.ValueOf(&n))
	case f.Type() == reflect.TypeOf([]string(nil)):
		f.Set(reflect.Append(f, reflect.ValueOf("x")))
	case f.Type() == reflect.TypeOf([]StatusRange(nil)):
		f.Set(reflect.Append(f, reflect.ValueOf(StatusRange{500, 599})))
	default:
		t.Fatalf("%s.%s: no differing value for a %s; teach differing and the share's key", v.Type(), v.Type().Field(i).Name, f.Type())
	}
	return c
}

// TestShareTellsEveryFieldApart changes each exported field of a URL
// and of an HTTPCheck in turn: a value differing in any field that a
// reader of the model can see must not be shared with the base value,
// so a field added to either type without a place in its key fails
// here.
func TestShareTellsEveryFieldApart(t *testing.T) {
	max := 9
	base := URL{Path: "/p", Digest: "d", StatusCodes: []StatusRange{{200, 299}}, VirtualHost: "v",
		Regex: "r", RegexOptions: []string{"caseless"}, RegexMinOffset: 1, RegexMaxOffset: &max}
	var s checkShare
	b := s.url(&base)
	if got := s.url(&URL{Path: "/p", Digest: "d", StatusCodes: []StatusRange{{200, 299}}, VirtualHost: "v",
		Regex: "r", RegexOptions: []string{"caseless"}, RegexMinOffset: 1, RegexMaxOffset: &max}); got != b {
		t.Errorf("a url of the same value is not shared")
	}
	typ := reflect.TypeOf(base)
	for i := range typ.NumField() {
		f := typ.Field(i)
		if !f.IsExported() || f.Name == "Regexp" { // Regexp is Regex compiled
			continue
		}
		u := differing(t, reflect.ValueOf(base), i).Interface().(URL)
		if s.url(&u) == b {
			t.Errorf("URL.%s: a url that differs in it shares the base url", f.Name)
		}
	}

	other := s.url(&URL{Path: "/other"})
	hbase := HTTPCheck{URLs: []*URL{b}, VirtualHost: "v", SNIVirtualHost: "s", HTTPProtocol: "1.1",
		SNIName: "n", ReuseConnection: time.Minute}
	hb := s.http(hbase)
	if s.http(hbase) != hb {
		t.Errorf("an HTTP check of the same value is not shared")
	}
	htyp := reflect.TypeOf(hbase)
	for i := range htyp.NumField() {
		f := htyp.Field(i)
		if !f.IsExported() {
			continue
		}
		var h HTTPCheck
		if f.Name == "URLs" {
			h = hbase
			h.URLs = []*URL{other}
			if s.http(h) == hb {
				t.Errorf("HTTPCheck.URLs: another url shares the base check")
			}
			h.URLs = []*URL{b, other}
		} else {
			h = differing(t, reflect.ValueOf(hbase), i).Interface().(HTTPCheck)
		}
		if s.http(h) == hb {
			t.Errorf("HTTPCheck.%s: a check that differs in it shares the base check", f.Name)
		}
	}
	// A url made by hand, not by the share, is never shared.
	h := hbase
	h.URLs = []*URL{{Path: "/p"}}
	if p, q := s.http(h), s.http(h); p == q {
		t.Errorf("HTTP checks of urls not from the share are shared")
	}
}

// TestSharedCheckResolvedApart loads two virtual servers whose real
// servers' SSL_GET blocks are written alike but whose virtual hosts
// differ: each checker must resolve its own Host and SNI names, the
// one block is shared within a virtual server only.
func TestSharedCheckResolvedApart(t *testing.T) {
	cfg := mustParse(t, `
virtual_server 192.0.2.1 443 {
    protocol TCP
    virtualhost one.example
    real_server 198.51.100.1 443 {
        SSL_GET { url { path /ok } }
    }
    real_server 198.51.100.2 443 {
        SSL_GET { url { path /ok } }
    }
}
virtual_server 192.0.2.2 443 {
    protocol TCP
    virtualhost two.example
    real_server 198.51.100.1 443 {
        virtualhost rs.example
        SSL_GET { url { path /ok } }
    }
}
`, Options{})
	one := cfg.VirtualServers[0].RealServers
	two := cfg.VirtualServers[1].RealServers[0].Checkers[0].HTTP
	a, b := one[0].Checkers[0].HTTP, one[1].Checkers[0].HTTP
	if a != b {
		t.Errorf("the two real servers of one virtual server checked alike hold two HTTP checks")
	}
	if a.VirtualHost != "one.example" || a.SNIVirtualHost != "one.example" {
		t.Errorf("first virtual server's check: Host %q, SNI %q; want one.example for both", a.VirtualHost, a.SNIVirtualHost)
	}
	if two.VirtualHost != "rs.example" || two.SNIVirtualHost != "two.example" {
		t.Errorf("second virtual server's check: Host %q, SNI %q; want rs.example and two.example", two.VirtualHost, two.SNIVirtualHost)
	}
	if a.URLs[0] != two.URLs[0] {
		t.Errorf("the url written alike in both virtual servers is held twice")
	}
}
