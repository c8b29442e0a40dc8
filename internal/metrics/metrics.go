package metrics

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/collectors"
	"github.com/prometheus/client_golang/prometheus/promhttp"

	"github.com/directord/directord/internal/control"
	"github.com/directord/directord/internal/script"
)

// CheckDurationBuckets are the upper bounds, in seconds, of
// directord_check_duration_seconds: 1 ms (a TCP_CHECK on the same
// network) to 10 s (a slow SSL_GET or MISC_CHECK near its timeout).
var CheckDurationBuckets = []float64{
	0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10,
}

// CheckWaitBuckets are the upper bounds, in seconds, of
// directord_check_wait_seconds: a probe on time waits for nothing; one
// that waits about its delay_loop (seconds to minutes) was late a whole
// cycle.
var CheckWaitBuckets = []float64{0.001, 0.01, 0.1, 0.5, 1, 2, 5, 10, 30, 60, 300}

// Metrics is directord's Prometheus registry: the status snapshot read at
// each scrape, the health-check counters fed by ObserveCheck, and the Go
// runtime's and the process's own metrics. Its methods are safe for
// concurrent use.
type Metrics struct {
	reg           *prometheus.Registry
	checks        *prometheus.CounterVec
	checkDuration *prometheus.HistogramVec
	checkWait     *prometheus.HistogramVec
	scriptDrops   *prometheus.CounterVec
}

// ScriptKinds are the kinds of script queue ObserveScriptDropped counts:
// VRRP instances' notify scripts, sync groups', and the virtual and real
// servers' (quorum_up/down, notify_up/down).
var ScriptKinds = []string{script.KindVRRP, script.KindSyncGroup, script.KindLVS}

// New returns the metrics of a daemon whose state snapshot returns.
// snapshot is called once per scrape, possibly from several scrapes at
// once, and must be safe for concurrent use.
func New(snapshot func() control.Status) *Metrics {
	m := &Metrics{
		reg: prometheus.NewRegistry(),
		checks: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "directord_checks_total",
			Help: "Health-check probes since start, by checker type and result (up, down or unknown).",
		}, []string{"type", "result"}),
		checkDuration: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "directord_check_duration_seconds",
			Help:    "How long health-check probes took, by checker type.",
			Buckets: CheckDurationBuckets,
		}, []string{"type"}),
		checkWait: prometheus.NewHistogramVec(prometheus.HistogramOpts{
			Name:    "directord_check_wait_seconds",
			Help:    "How long health-check probes waited for this director (to start once due, for a TLS handshake slot), by checker type: waits near the delay_loop mean more checks than the director's CPU serves.",
			Buckets: CheckWaitBuckets,
		}, []string{"type"}),
		scriptDrops: prometheus.NewCounterVec(prometheus.CounterOpts{
			Name: "directord_scripts_dropped_total",
			Help: "Notify scripts dropped since start because too many were waiting behind a running one of the same instance, group or data plane (the oldest waiting is dropped), by kind (vrrp, sync_group, lvs).",
		}, []string{"kind"}),
	}
	for _, k := range ScriptKinds {
		m.scriptDrops.WithLabelValues(k) // every kind shown, at 0 until a drop
	}
	m.reg.MustRegister(
		m.scriptDrops,
		statusCollector{snapshot: snapshot},
		m.checks,
		m.checkDuration,
		m.checkWait,
		collectors.NewGoCollector(),
		collectors.NewProcessCollector(collectors.ProcessCollectorOpts{}),
	)
	return m
}

// ObserveCheck records one health-check probe: its checker type (SSL_GET,
// HTTP_GET, TCP_CHECK, UDP_CHECK, DNS_CHECK, SMTP_CHECK, MISC_CHECK), its result (up, down, unknown), how
// long it took and how long it waited for this director. Type and result
// are label values, so callers pass these fixed vocabularies and nothing
// per real server.
func (m *Metrics) ObserveCheck(checkType, result string, latency, waited time.Duration) {
	m.checks.WithLabelValues(checkType, result).Inc()
	m.checkDuration.WithLabelValues(checkType).Observe(latency.Seconds())
	m.checkWait.WithLabelValues(checkType).Observe(waited.Seconds())
}

// ObserveScriptDropped counts one notify script dropped from the script
// queue; kind is one of ScriptKinds.
func (m *Metrics) ObserveScriptDropped(kind string) {
	m.scriptDrops.WithLabelValues(kind).Inc()
}

// Handler serves the metrics in the Prometheus exposition formats.
func (m *Metrics) Handler() http.Handler {
	return m.handler(nil)
}

// maxScrapes bounds the scrapes served at once: each reads a snapshot of
// every real server, and a misconfigured scraper must not load the daemon.
// Prometheus itself scrapes a target one at a time.
const maxScrapes = 4

func (m *Metrics) handler(log *slog.Logger) http.Handler {
	opts := promhttp.HandlerOpts{
		// A metric that fails to collect is left out, the rest served.
		ErrorHandling:       promhttp.ContinueOnError,
		MaxRequestsInFlight: maxScrapes,
	}
	if log != nil {
		opts.ErrorLog = slogPrintln{log}
	}
	return promhttp.HandlerFor(m.reg, opts)
}

// slogPrintln is the promhttp.Logger of a slog.Logger.
type slogPrintln struct{ log *slog.Logger }

func (l slogPrintln) Println(v ...any) {
	l.log.Warn("metrics: " + fmt.Sprint(v...))
}

const index = `<!DOCTYPE html>
<html><head><title>directord</title></head>
<body><h1>directord</h1><p><a href="/metrics">Metrics</a></p></body></html>
`

// Server timeouts: a scrape of a large table takes well under a second;
// these only stop a stuck or hostile client from holding a connection.
const (
	readHeaderTimeout = 5 * time.Second
	readTimeout       = 10 * time.Second
	writeTimeout      = 30 * time.Second
	idleTimeout       = 2 * time.Minute
	shutdownTimeout   = 5 * time.Second
)

// Serve listens on addr (TCP "host:port"; ":9650" is every address) and
// serves /metrics, and a page linking to it at /, until ctx ends; then the
// server shuts down, letting scrapes in progress finish for a few
// seconds. Serve returns once it listens, so that the daemon can refuse to
// start when the address cannot be bound: that error is Serve's. Later
// errors are logged to log, which may be nil.
func (m *Metrics) Serve(ctx context.Context, addr string, log *slog.Logger) error {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	if addr == "" {
		// net.Listen would pick a port on every address.
		return errors.New("metrics: listen: no address")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(ctx, "tcp", addr)
	if err != nil {
		return fmt.Errorf("metrics: listen on %s: %w", addr, err)
	}
	mux := http.NewServeMux()
	mux.Handle("GET /metrics", m.handler(log))
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "text/html; charset=utf-8")
		_, _ = w.Write([]byte(index))
	})
	srv := &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       readTimeout,
		WriteTimeout:      writeTimeout,
		IdleTimeout:       idleTimeout,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
	log.Info("metrics: serving", "address", ln.Addr().String())

	go func() {
		served := make(chan error, 1)
		go func() { served <- srv.Serve(ln) }()
		select {
		case err := <-served:
			// Serve only returns early when the listener fails.
			log.Error("metrics: server stopped", "address", ln.Addr().String(), "err", err)
		case <-ctx.Done():
			sctx, cancel := context.WithTimeout(context.Background(), shutdownTimeout)
			defer cancel()
			if err := srv.Shutdown(sctx); err != nil {
				srv.Close()
			}
			<-served
			log.Info("metrics: stopped", "address", ln.Addr().String())
		}
	}()
	return nil
}
