package config

import (
	"encoding"
	"encoding/json"
	"fmt"
	"testing"
)

// enumCase is one enum's words, in the order of its constants from the
// zero value on.
type enumCase struct {
	name  string
	words []string
	value func(i int) encoding.TextMarshaler
	fresh func() encoding.TextUnmarshaler
}

func enumCases() []enumCase {
	return []enumCase{
		{"Family", []string{"", "inet", "inet6"},
			func(i int) encoding.TextMarshaler { return Family(i) },
			func() encoding.TextUnmarshaler { return new(Family) }},
		{"MethodKind", []string{"", "NAT", "DR", "TUN"},
			func(i int) encoding.TextMarshaler { return MethodKind(i) },
			func() encoding.TextUnmarshaler { return new(MethodKind) }},
		{"Protocol", []string{"", "TCP", "UDP", "SCTP"},
			func(i int) encoding.TextMarshaler { return Protocol(i) },
			func() encoding.TextUnmarshaler { return new(Protocol) }},
		{"CheckerType", []string{"", "HTTP_GET", "SSL_GET", "TCP_CHECK", "MISC_CHECK", "UDP_CHECK", "DNS_CHECK", "SMTP_CHECK"},
			func(i int) encoding.TextMarshaler { return CheckerType(i) },
			func() encoding.TextUnmarshaler { return new(CheckerType) }},
		{"State", []string{"", "BACKUP", "MASTER"},
			func(i int) encoding.TextMarshaler { return State(i) },
			func() encoding.TextUnmarshaler { return new(State) }},
		{"AuthType", []string{"", "PASS", "AH"},
			func(i int) encoding.TextMarshaler { return AuthType(i) },
			func() encoding.TextUnmarshaler { return new(AuthType) }},
		{"FlushOnStop", []string{"", "ALL", "VS"},
			func(i int) encoding.TextMarshaler { return FlushOnStop(i) },
			func() encoding.TextUnmarshaler { return new(FlushOnStop) }},
		{"TunnelType", []string{"", "ipip", "gue", "gre"},
			func(i int) encoding.TextMarshaler { return TunnelType(i) },
			func() encoding.TextUnmarshaler { return new(TunnelType) }},
		{"TunnelCsum", []string{"", "nocsum", "csum", "remcsum"},
			func(i int) encoding.TextMarshaler { return TunnelCsum(i) },
			func() encoding.TextUnmarshaler { return new(TunnelCsum) }},
		{"RuleAction", []string{"", "table", "goto", "nop", "blackhole", "unreachable", "prohibit"},
			func(i int) encoding.TextMarshaler { return RuleAction(i) },
			func() encoding.TextUnmarshaler { return new(RuleAction) }},
	}
}

// TestEnumText checks each enum's words both ways, that JSON shows the
// word (as the string field it replaced did) and that an unknown word is
// refused.
func TestEnumText(t *testing.T) {
	for _, c := range enumCases() {
		t.Run(c.name, func(t *testing.T) {
			for i, w := range c.words {
				v := c.value(i)
				b, err := v.MarshalText()
				if err != nil || string(b) != w {
					t.Errorf("%d: MarshalText = %q, %v; want %q", i, b, err, w)
				}
				if s := v.(fmt.Stringer).String(); s != w {
					t.Errorf("%d: String = %q, want %q", i, s, w)
				}
				j, err := json.Marshal(v)
				if want, _ := json.Marshal(w); err != nil || string(j) != string(want) {
					t.Errorf("%d: JSON %s, %v; want %s", i, j, err, want)
				}
				u := c.fresh()
				if err := u.UnmarshalText([]byte(w)); err != nil || u.(fmt.Stringer).String() != w {
					t.Errorf("%d: UnmarshalText(%q) = %v, %v", i, w, u, err)
				}
			}
			if err := c.fresh().UnmarshalText([]byte("bogus")); err == nil {
				t.Errorf("UnmarshalText(bogus) succeeded")
			}
			if s := c.value(len(c.words)).(fmt.Stringer).String(); s == "" {
				t.Errorf("a value past the constants shows as the empty word")
			}
		})
	}
}
