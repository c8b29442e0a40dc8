package metrics

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	dto "github.com/prometheus/client_model/go"
	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"

	"github.com/directord/directord/internal/control"
)

var (
	started  = time.Date(2026, 3, 1, 10, 0, 0, 0, time.UTC)
	goodLoad = started.Add(90 * time.Minute)
	synced   = started.Add(91*time.Minute + 500*time.Millisecond)
)

// fakeStatus is a director with two VRRP instances (one MASTER that has
// dropped adverts) and two virtual servers with live, drained and dead
// real servers.
func fakeStatus() control.Status {
	return control.Status{
		Version:        "1.2.3",
		PID:            4242,
		Started:        started,
		ConfigFile:     "/etc/keepalived/keepalived.conf",
		LastReload:     &control.Reload{At: synced, OK: false, Error: "keepalived.conf:12: weight: not a number"},
		LastGoodReload: goodLoad,
		ReloadsOK:      3,
		ReloadsFailed:  1,
		Instances: []control.Instance{
			{
				Name: "VI_1", VRID: 51, Interface: "eth0", Version: 2, State: "MASTER",
				Priority: 150, EffectivePriority: 140,
				AdvertsSent: 1000, AdvertsReceived: 7, Transitions: 2,
				Drops: map[string]uint64{"auth": 3, "ttl": 1},
			},
			{
				Name: "VI_2", VRID: 52, Interface: "eth1", Version: 3, State: "BACKUP",
				Priority: 100, EffectivePriority: 100,
				AdvertsReceived: 900, Transitions: 1,
			},
		},
		VirtualServers: []control.VirtualServer{
			{
				Name: "192.0.2.1 443", Position: "keepalived.conf:20", QuorumUp: true,
				Digest: "sha256:0123456789abcdef",
				Reals: []control.Real{
					{Addr: "10.0.0.1:443", Alive: true, Weight: 100, EffectiveWeight: 100},
					{Addr: "10.0.0.2:443", Alive: true, Drained: true, Weight: 100, EffectiveWeight: 0},
					{Addr: "10.0.0.3:443", Alive: false, Weight: 50, EffectiveWeight: 0},
				},
			},
			{
				Name: "fwmark 1", Position: "keepalived.conf:40", QuorumUp: false,
				Reals: []control.Real{
					{Addr: "10.0.1.1:80", Alive: false, Weight: 1, EffectiveWeight: -1},
				},
			},
		},
		Drained: []string{"10.0.0.2:443"},
		IPVS:    control.IPVS{Operations: 42, Errors: 1, LastSync: synced},
		BGP: &control.BGP{LocalAS: 65010, RouterID: "10.0.0.11",
			Neighbors: []control.BGPNeighbor{
				{Address: "10.0.0.1", RemoteAS: 65000, State: "established", BFD: "up", PrefixesSent: 2},
				{Address: "10.0.0.2", RemoteAS: 65000, State: "active"}},
			Addresses: []control.BGPAddress{
				{Prefix: "192.0.2.1/32", Announced: true, Reason: "serving"},
				{Prefix: "192.0.2.2/32", Reason: "no-quorum"}}},
	}
}

// fakeSeries is every directord_ series of fakeStatus, before any probe.
var fakeSeries = merge(
	vrrpSeries("VI_1", "eth0", 51, "MASTER", vrrpFigures{master: 1, priority: 150, effective: 140, transitions: 2, sent: 1000, received: 7}),
	vrrpSeries("VI_2", "eth1", 52, "BACKUP", vrrpFigures{priority: 100, effective: 100, transitions: 1, received: 900}),
	map[string]float64{
		`directord_build_info{version="1.2.3"}`: 1,
		`directord_start_time_seconds`:          float64(started.Unix()),

		`directord_vrrp_adverts_dropped_total{reason="auth",vrrp_instance="VI_1"}`: 3,
		`directord_vrrp_adverts_dropped_total{reason="ttl",vrrp_instance="VI_1"}`:  1,

		`directord_real_server_up{real_server="10.0.0.1:443",virtual_server="192.0.2.1 443"}`:                        1,
		`directord_real_server_up{real_server="10.0.0.2:443",virtual_server="192.0.2.1 443"}`:                        1,
		`directord_real_server_up{real_server="10.0.0.3:443",virtual_server="192.0.2.1 443"}`:                        0,
		`directord_real_server_up{real_server="10.0.1.1:80",virtual_server="fwmark 1"}`:                              0,
		`directord_real_server_weight{real_server="10.0.0.1:443",virtual_server="192.0.2.1 443"}`:                    100,
		`directord_real_server_weight{real_server="10.0.0.2:443",virtual_server="192.0.2.1 443"}`:                    0,
		`directord_real_server_weight{real_server="10.0.0.3:443",virtual_server="192.0.2.1 443"}`:                    0,
		`directord_real_server_weight{real_server="10.0.1.1:80",virtual_server="fwmark 1"}`:                          -1,
		`directord_real_server_drained{real_server="10.0.0.1:443",virtual_server="192.0.2.1 443"}`:                   0,
		`directord_real_server_drained{real_server="10.0.0.2:443",virtual_server="192.0.2.1 443"}`:                   1,
		`directord_real_server_drained{real_server="10.0.0.3:443",virtual_server="192.0.2.1 443"}`:                   0,
		`directord_real_server_drained{real_server="10.0.1.1:80",virtual_server="fwmark 1"}`:                         0,
		`directord_virtual_server_real_servers{state="up",virtual_server="192.0.2.1 443"}`:                           2,
		`directord_virtual_server_real_servers{state="down",virtual_server="192.0.2.1 443"}`:                         1,
		`directord_virtual_server_real_servers{state="up",virtual_server="fwmark 1"}`:                                0,
		`directord_virtual_server_real_servers{state="down",virtual_server="fwmark 1"}`:                              1,
		`directord_virtual_server_quorum_up{virtual_server="192.0.2.1 443"}`:                                         1,
		`directord_virtual_server_quorum_up{virtual_server="fwmark 1"}`:                                              0,
		`directord_virtual_server_ipvs_digest_info{digest="sha256:0123456789abcdef",virtual_server="192.0.2.1 443"}`: 1,

		`directord_ipvs_operations_total`:            42,
		`directord_ipvs_errors_total`:                1,
		`directord_ipvs_last_sync_timestamp_seconds`: float64(synced.UnixMilli()) / 1e3,

		`directord_bgp_drained`:                                                     0,
		`directord_bgp_neighbor_up{neighbor="10.0.0.1"}`:                            1,
		`directord_bgp_neighbor_up{neighbor="10.0.0.2"}`:                            0,
		`directord_bgp_neighbor_bfd_up{neighbor="10.0.0.1"}`:                        1,
		`directord_bgp_neighbor_prefixes_sent{neighbor="10.0.0.1"}`:                 2,
		`directord_bgp_neighbor_prefixes_sent{neighbor="10.0.0.2"}`:                 0,
		`directord_bgp_address_announced{prefix="192.0.2.1/32",reason="serving"}`:   1,
		`directord_bgp_address_announced{prefix="192.0.2.2/32",reason="no-quorum"}`: 0,

		`directord_reloads_total{result="ok"}`:         3,
		`directord_reloads_total{result="failed"}`:     1,
		`directord_last_good_reload_timestamp_seconds`: float64(goodLoad.Unix()),
	})

func TestScrape(t *testing.T) {
	dupStatus := control.Status{
		Version: "dev",
		Instances: []control.Instance{
			{Name: "VI_1", VRID: 1, Interface: "eth0", State: "MASTER"},
			{Name: "VI_1", VRID: 2, Interface: "eth0", State: "BACKUP"}, // left out
			{Name: "VI_3", VRID: 3, Interface: "eth0", State: "STOPPED"},
		},
		VirtualServers: []control.VirtualServer{
			{Name: "fwmark 1", Position: "a.conf:3", Reals: []control.Real{
				{Addr: "10.0.0.1:80", Alive: true, EffectiveWeight: 1},
				{Addr: "10.0.0.1:80", Alive: false, EffectiveWeight: 9}, // left out
			}},
			{Name: "fwmark 1", Position: "a.conf:9"},
			{Name: "fwmark 1", Position: "a.conf:9"}, // left out
			{Name: "192.0.2.1 53", Position: "a.conf:20", Protocol: "UDP"},
			{Name: "192.0.2.1 53", Position: "a.conf:30", Protocol: "TCP"},
		},
	}
	tests := []struct {
		name   string
		status control.Status
		want   map[string]float64
	}{
		{name: "two instances, two virtual servers", status: fakeStatus(), want: fakeSeries},
		{
			name:   "nothing happened yet",
			status: control.Status{Version: "dev"},
			want:   idleSeries("dev"),
		},
		{
			name:   "duplicates",
			status: dupStatus,
			want: merge(idleSeries("dev"),
				vrrpSeries("VI_1", "eth0", 1, "MASTER", vrrpFigures{master: 1}),
				// A state this package does not know is shown as well.
				vrrpSeries("VI_3", "eth0", 3, "STOPPED", vrrpFigures{}),
				map[string]float64{
					// Two virtual servers named alike are told apart by position.
					`directord_real_server_up{real_server="10.0.0.1:80",virtual_server="fwmark 1 (a.conf:3)"}`:      1,
					`directord_real_server_weight{real_server="10.0.0.1:80",virtual_server="fwmark 1 (a.conf:3)"}`:  1,
					`directord_real_server_drained{real_server="10.0.0.1:80",virtual_server="fwmark 1 (a.conf:3)"}`: 0,
					`directord_virtual_server_real_servers{state="up",virtual_server="fwmark 1 (a.conf:3)"}`:        1,
					`directord_virtual_server_real_servers{state="down",virtual_server="fwmark 1 (a.conf:3)"}`:      0,
					`directord_virtual_server_quorum_up{virtual_server="fwmark 1 (a.conf:3)"}`:                      0,
					`directord_virtual_server_real_servers{state="up",virtual_server="fwmark 1 (a.conf:9)"}`:        0,
					`directord_virtual_server_real_servers{state="down",virtual_server="fwmark 1 (a.conf:9)"}`:      0,
					`directord_virtual_server_quorum_up{virtual_server="fwmark 1 (a.conf:9)"}`:                      0,
					// The same address and port over two protocols: by protocol.
					`directord_virtual_server_real_servers{state="up",virtual_server="192.0.2.1 53 UDP"}`:   0,
					`directord_virtual_server_real_servers{state="down",virtual_server="192.0.2.1 53 UDP"}`: 0,
					`directord_virtual_server_quorum_up{virtual_server="192.0.2.1 53 UDP"}`:                 0,
					`directord_virtual_server_real_servers{state="up",virtual_server="192.0.2.1 53 TCP"}`:   0,
					`directord_virtual_server_real_servers{state="down",virtual_server="192.0.2.1 53 TCP"}`: 0,
					`directord_virtual_server_quorum_up{virtual_server="192.0.2.1 53 TCP"}`:                 0,
				}),
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			m := New(func() control.Status { return tt.status })
			srv := httptest.NewServer(m.Handler())
			defer srv.Close()

			got := directordSeries(scrape(t, srv.URL))
			for _, k := range ScriptKinds { // counted, not read from the status: 0 here
				delete(got, `directord_scripts_dropped_total{kind="`+k+`"}`)
			}
			if diff := diffSeries(got, tt.want); diff != "" {
				t.Errorf("scrape (-got +want):\n%s", diff)
			}
		})
	}
}

func TestLint(t *testing.T) {
	m := New(fakeStatus)
	m.ObserveCheck("HTTP_GET", "up", time.Millisecond, 0)
	problems, err := testutil.GatherAndLint(m.reg)
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range problems {
		if strings.HasPrefix(p.Metric, "directord_") {
			t.Errorf("lint: %s: %s", p.Metric, p.Text)
		}
	}
}

func TestRuntimeCollectors(t *testing.T) {
	m := New(fakeStatus)
	for _, name := range []string{"go_goroutines", "process_start_time_seconds"} {
		if n, err := testutil.GatherAndCount(m.reg, name); err != nil || n != 1 {
			t.Errorf("%s: %d series, err %v; want 1", name, n, err)
		}
	}
}

func TestObserveCheck(t *testing.T) {
	m := New(fakeStatus)
	m.ObserveCheck("HTTP_GET", "up", 3*time.Millisecond, 0)
	m.ObserveCheck("HTTP_GET", "up", 4*time.Millisecond, 0)
	m.ObserveCheck("HTTP_GET", "down", 2*time.Second, 7*time.Second) // waited for this director
	m.ObserveCheck("TCP_CHECK", "up", 500*time.Microsecond, 0)
	m.ObserveCheck("MISC_CHECK", "unknown", 30*time.Second, 0) // beyond the last bucket

	for _, c := range []struct {
		typ, result string
		want        float64
	}{
		{"HTTP_GET", "up", 2},
		{"HTTP_GET", "down", 1},
		{"TCP_CHECK", "up", 1},
		{"MISC_CHECK", "unknown", 1},
	} {
		if got := testutil.ToFloat64(m.checks.WithLabelValues(c.typ, c.result)); got != c.want {
			t.Errorf("checks_total{type=%q,result=%q} = %v, want %v", c.typ, c.result, got, c.want)
		}
	}

	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	got := directordSeries(scrape(t, srv.URL))
	want := map[string]float64{
		`directord_checks_total{result="up",type="HTTP_GET"}`:                  2,
		`directord_check_duration_seconds_count{type="HTTP_GET"}`:              3,
		`directord_check_duration_seconds_sum{type="HTTP_GET"}`:                2.007,
		`directord_check_duration_seconds_bucket{le="0.0025",type="HTTP_GET"}`: 0,
		`directord_check_duration_seconds_bucket{le="0.005",type="HTTP_GET"}`:  2,
		`directord_check_duration_seconds_bucket{le="1",type="HTTP_GET"}`:      2,
		`directord_check_duration_seconds_bucket{le="2.5",type="HTTP_GET"}`:    3,
		`directord_check_duration_seconds_bucket{le="+Inf",type="HTTP_GET"}`:   3,
		`directord_check_duration_seconds_bucket{le="0.001",type="TCP_CHECK"}`: 1,
		`directord_check_duration_seconds_bucket{le="10",type="MISC_CHECK"}`:   0,
		`directord_check_duration_seconds_bucket{le="+Inf",type="MISC_CHECK"}`: 1,
		`directord_check_wait_seconds_count{type="HTTP_GET"}`:                  3,
		`directord_check_wait_seconds_sum{type="HTTP_GET"}`:                    7,
		`directord_check_wait_seconds_bucket{le="0.001",type="HTTP_GET"}`:      2,
		`directord_check_wait_seconds_bucket{le="5",type="HTTP_GET"}`:          2,
		`directord_check_wait_seconds_bucket{le="10",type="HTTP_GET"}`:         3,
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || math.Abs(g-w) > 1e-9 {
			t.Errorf("%s = %v (present %v), want %v", k, g, ok, w)
		}
	}
	// One histogram per checker type, one bucket per bound and +Inf.
	buckets := 0
	for k := range got {
		if strings.HasPrefix(k, "directord_check_duration_seconds_bucket{") {
			buckets++
		}
	}
	if want := 3 * (len(CheckDurationBuckets) + 1); buckets != want {
		t.Errorf("%d buckets, want %d", buckets, want)
	}
}

// TestConcurrent observes probes and scrapes at once; run with -race.
func TestConcurrent(t *testing.T) {
	var mu sync.Mutex
	status := fakeStatus()
	m := New(func() control.Status {
		mu.Lock()
		defer mu.Unlock()
		s := status
		s.Instances = slices.Clone(s.Instances)
		return s
	})
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()

	const observers, probes, scrapers, scrapes = 8, 500, maxScrapes, 20
	var wg sync.WaitGroup
	for i := range observers {
		wg.Go(func() {
			for j := range probes {
				m.ObserveCheck("TCP_CHECK", []string{"up", "down"}[(i+j)%2], time.Duration(j)*time.Millisecond, 0)
			}
		})
	}
	wg.Go(func() { // the daemon's state moves on meanwhile
		for range scrapes {
			mu.Lock()
			status.IPVS.Operations++
			mu.Unlock()
		}
	})
	errs := make(chan error, scrapers*scrapes)
	for range scrapers {
		wg.Go(func() {
			for range scrapes {
				if _, err := get(srv.URL + "/metrics"); err != nil {
					errs <- err
				}
			}
		})
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Error(err)
	}

	got := directordSeries(scrape(t, srv.URL))
	total := got[`directord_checks_total{result="up",type="TCP_CHECK"}`] + got[`directord_checks_total{result="down",type="TCP_CHECK"}`]
	if total != observers*probes {
		t.Errorf("checks_total = %v, want %v", total, observers*probes)
	}
	if n := got[`directord_check_duration_seconds_count{type="TCP_CHECK"}`]; n != observers*probes {
		t.Errorf("check_duration_seconds_count = %v, want %v", n, observers*probes)
	}
}

func TestServe(t *testing.T) {
	m := New(fakeStatus)
	logs := &recordLog{}
	ctx, cancel := context.WithCancel(t.Context())
	defer cancel()
	if err := m.Serve(ctx, "127.0.0.1:0", slog.New(logs)); err != nil {
		t.Fatalf("Serve: %v", err)
	}
	addr := logs.attr("metrics: serving", "address")
	if addr == "" {
		t.Fatalf("Serve did not log its address: %v", logs.messages())
	}
	base := "http://" + addr

	for _, c := range []struct {
		path     string
		status   int
		contains string
	}{
		{"/metrics", http.StatusOK, `directord_build_info{version="1.2.3"} 1`},
		{"/", http.StatusOK, `<a href="/metrics">`},
		{"/other", http.StatusNotFound, ""},
	} {
		resp, err := http.Get(base + c.path)
		if err != nil {
			t.Fatal(err)
		}
		body, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if resp.StatusCode != c.status || !strings.Contains(string(body), c.contains) {
			t.Errorf("GET %s: %s, body %.200q; want %d and %q", c.path, resp.Status, body, c.status, c.contains)
		}
	}

	// The address is in use while Serve serves: a second Serve fails at
	// once, which is how the daemon refuses to start.
	err := m.Serve(t.Context(), addr, nil)
	if !errors.Is(err, syscall.EADDRINUSE) {
		t.Errorf("Serve on an address in use: %v, want EADDRINUSE", err)
	}

	cancel()
	deadline := time.Now().Add(10 * time.Second)
	for {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err != nil {
			break
		}
		c.Close()
		if time.Now().After(deadline) {
			t.Fatal("still listening after its context ended")
		}
		time.Sleep(10 * time.Millisecond)
	}
	for time.Now().Before(deadline) && logs.attr("metrics: stopped", "address") != addr {
		time.Sleep(10 * time.Millisecond)
	}
	if logs.attr("metrics: stopped", "address") != addr {
		t.Errorf("no clean stop logged: %v", logs.messages())
	}
}

func TestServeBadAddress(t *testing.T) {
	m := New(fakeStatus)
	for _, addr := range []string{"", "127.0.0.1", "127.0.0.1:notaport", "127.0.0.1:99999", "[::1"} {
		t.Run(addr, func(t *testing.T) {
			ctx, cancel := context.WithCancel(t.Context())
			defer cancel()
			err := m.Serve(ctx, addr, nil)
			if err == nil {
				t.Fatalf("Serve(%q) = nil, want an error", addr)
			}
			if !strings.Contains(err.Error(), "metrics: listen") {
				t.Errorf("Serve(%q) = %v; want it to say what failed", addr, err)
			}
		})
	}
}

// scrape GETs /metrics under base and parses the text exposition.
func scrape(t *testing.T, base string) map[string]*dto.MetricFamily {
	t.Helper()
	body, err := get(base + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	p := expfmt.NewTextParser(model.UTF8Validation)
	families, err := p.TextToMetricFamilies(strings.NewReader(body))
	if err != nil {
		t.Fatalf("parse the scrape: %v\n%s", err, body)
	}
	return families
}

func get(url string) (string, error) {
	resp, err := http.Get(url)
	if err != nil {
		return "", err
	}
	defer resp.Body.Close()
	body, err := io.ReadAll(resp.Body)
	if err != nil {
		return "", err
	}
	if resp.StatusCode != http.StatusOK {
		return "", fmt.Errorf("GET %s: %s: %s", url, resp.Status, body)
	}
	return string(body), nil
}

// directordSeries flattens the directord_ families into one value per
// series, keyed as the exposition writes them with labels sorted by name;
// a histogram becomes its _bucket, _sum and _count series.
func directordSeries(families map[string]*dto.MetricFamily) map[string]float64 {
	out := make(map[string]float64)
	for name, f := range families {
		if !strings.HasPrefix(name, "directord_") {
			continue
		}
		for _, m := range f.GetMetric() {
			labels := make([]string, 0, len(m.GetLabel()))
			for _, l := range m.GetLabel() {
				labels = append(labels, fmt.Sprintf("%s=%q", l.GetName(), l.GetValue()))
			}
			key := func(suffix string, extra ...string) string {
				ls := append(slices.Clone(labels), extra...)
				slices.Sort(ls)
				if len(ls) == 0 {
					return name + suffix
				}
				return name + suffix + "{" + strings.Join(ls, ",") + "}"
			}
			switch f.GetType() {
			case dto.MetricType_COUNTER:
				out[key("")] = m.GetCounter().GetValue()
			case dto.MetricType_GAUGE:
				out[key("")] = m.GetGauge().GetValue()
			case dto.MetricType_HISTOGRAM:
				h := m.GetHistogram()
				for _, b := range h.GetBucket() {
					le := fmt.Sprintf("le=%q", formatBound(b.GetUpperBound()))
					out[key("_bucket", le)] = float64(b.GetCumulativeCount())
				}
				out[key("_bucket", `le="+Inf"`)] = float64(h.GetSampleCount())
				out[key("_sum")] = h.GetSampleSum()
				out[key("_count")] = float64(h.GetSampleCount())
			default:
				out[key("")] = math.NaN()
			}
		}
	}
	return out
}

func formatBound(b float64) string {
	if math.IsInf(b, +1) {
		return "+Inf"
	}
	return fmt.Sprint(b)
}

// diffSeries lists the series missing from got (+), unexpected in it (-)
// and different, sorted; "" when they agree.
func diffSeries(got, want map[string]float64) string {
	var lines []string
	for k, w := range want {
		g, ok := got[k]
		switch {
		case !ok:
			lines = append(lines, fmt.Sprintf("+ %s %v", k, w))
		case math.Abs(g-w) > 1e-6:
			lines = append(lines, fmt.Sprintf("- %s %v\n+ %s %v", k, g, k, w))
		}
	}
	for k, g := range got {
		if _, ok := want[k]; !ok {
			lines = append(lines, fmt.Sprintf("- %s %v", k, g))
		}
	}
	slices.Sort(lines)
	return strings.Join(lines, "\n")
}

// recordLog is a slog.Handler that keeps every record's message and
// string attributes.
type recordLog struct {
	mu      sync.Mutex
	records []map[string]string
}

func (h *recordLog) Enabled(context.Context, slog.Level) bool { return true }
func (h *recordLog) WithAttrs([]slog.Attr) slog.Handler       { return h }
func (h *recordLog) WithGroup(string) slog.Handler            { return h }

func (h *recordLog) Handle(_ context.Context, r slog.Record) error {
	rec := map[string]string{"msg": r.Message}
	r.Attrs(func(a slog.Attr) bool {
		rec[a.Key] = a.Value.String()
		return true
	})
	h.mu.Lock()
	h.records = append(h.records, rec)
	h.mu.Unlock()
	return nil
}

// attr is the attribute key of the last record with message msg.
func (h *recordLog) attr(msg, key string) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	for _, r := range slices.Backward(h.records) {
		if r["msg"] == msg {
			return r[key]
		}
	}
	return ""
}

func (h *recordLog) messages() []map[string]string {
	h.mu.Lock()
	defer h.mu.Unlock()
	return slices.Clone(h.records)
}

// TestObserveScriptDropped: every kind of script drop is shown from the
// start at 0, and each drop counts under its kind.
func TestObserveScriptDropped(t *testing.T) {
	m := New(fakeStatus)
	srv := httptest.NewServer(m.Handler())
	defer srv.Close()
	m.ObserveScriptDropped("vrrp")
	m.ObserveScriptDropped("vrrp")
	m.ObserveScriptDropped("lvs")
	got := directordSeries(scrape(t, srv.URL))
	for k, want := range map[string]float64{"vrrp": 2, "sync_group": 0, "lvs": 1} {
		name := `directord_scripts_dropped_total{kind="` + k + `"}`
		if v, ok := got[name]; !ok || v != want {
			t.Errorf("%s = %v (shown %v), want %v", name, v, ok, want)
		}
	}
}

// vrrpFigures are an instance's figures in its directord_vrrp_ series.
type vrrpFigures struct {
	master, handedOver, priority, effective, transitions, sent, received float64
}

// vrrpSeries is the directord_vrrp_ series of one instance in state,
// without its drops: one a state the package knows (and state itself,
// were it another), then f.
func vrrpSeries(name, iface string, vrid int, state string, f vrrpFigures) map[string]float64 {
	out := map[string]float64{}
	states := []string{"INIT", "BACKUP", "MASTER", "FAULT"}
	if !slices.Contains(states, state) {
		states = append(states, state)
	}
	for _, s := range states {
		v := 0.0
		if s == state {
			v = 1
		}
		out[fmt.Sprintf(`directord_vrrp_state{interface="%s",state="%s",vrid="%d",vrrp_instance="%s"}`, iface, s, vrid, name)] = v
	}
	for metric, v := range map[string]float64{"master": f.master, "handed_over": f.handedOver, "priority": f.priority,
		"effective_priority": f.effective, "transitions_total": f.transitions, "adverts_sent_total": f.sent,
		"adverts_received_total": f.received} {
		out[`directord_vrrp_`+metric+`{vrrp_instance="`+name+`"}`] = v
	}
	return out
}

// idleSeries is what a directord of version that has done nothing yet
// shows.
func idleSeries(version string) map[string]float64 {
	return map[string]float64{
		`directord_build_info{version="` + version + `"}`: 1,
		`directord_start_time_seconds`:                    0,
		`directord_ipvs_operations_total`:                 0,
		`directord_ipvs_errors_total`:                     0,
		`directord_ipvs_last_sync_timestamp_seconds`:      0,
		`directord_reloads_total{result="ok"}`:            0,
		`directord_reloads_total{result="failed"}`:        0,
		`directord_last_good_reload_timestamp_seconds`:    0,
	}
}

// merge is the union of maps, none of which may give a key twice.
func merge(maps ...map[string]float64) map[string]float64 {
	out := map[string]float64{}
	for _, m := range maps {
		for k, v := range m {
			if _, dup := out[k]; dup {
				panic("series " + k + " given twice")
			}
			out[k] = v
		}
	}
	return out
}
