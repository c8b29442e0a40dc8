package main

import (
	"fmt"
	"image/color"
	"os"
	"path/filepath"

	"gonum.org/v1/plot"
	"gonum.org/v1/plot/plotter"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/draw"
	"gonum.org/v1/plot/vg/vgimg"
)

var (
	blue  = color.RGBA{R: 0x1f, G: 0x77, B: 0xb4, A: 0xff} // directord
	grey  = color.RGBA{R: 0x99, G: 0x99, B: 0x99, A: 0xff} // the bound
	red   = color.RGBA{R: 0xd6, G: 0x27, B: 0x28, A: 0xff} // keepalived
	green = color.RGBA{R: 0x2c, G: 0xa0, B: 0x2c, A: 0xff} // directord with reuse_connection
)

// plots draws failover.png (failover times beside the protocol's bound
// and keepalived's) and checks-cpu.png (the checkers' CPU against the
// number of real servers) into dir.
func (r *results) plots(dir string) error {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	if err := r.failoverPlot(filepath.Join(dir, "failover.png")); err != nil {
		return err
	}
	return r.checksPlot(filepath.Join(dir, "checks-cpu.png"))
}

func (r *results) failoverPlot(file string) error {
	type cse struct{ label, dName, kName string }
	var panels []*plot.Plot
	for _, p := range []struct{ name, title string }{{"v2-1s", "VRRPv2, advert_int 1 s"}, {"v3-100ms", "VRRPv3, advert_int 100 ms"}} {
		cases := []cse{
			{"master killed", "Failover/" + p.name + "/kill/master=keepalived/backup=directord", "Failover/" + p.name + "/kill/master=keepalived/backup=keepalived"},
			{"master stopped", "Failover/" + p.name + "/stop/master=keepalived/backup=directord", "Failover/" + p.name + "/stop/master=keepalived/backup=keepalived"},
			{"daemon killed, pair of each", "Failover/" + p.name + "/kill/master=directord/backup=directord", "Failover/" + p.name + "/kill/master=keepalived/backup=keepalived"},
		}
		var bound, dd, kk plotter.Values
		var names []string
		for _, c := range cases {
			b, _ := r.get(c.dName, "ms-bound")
			d, ok := r.get(c.dName, "ms-median")
			k, _ := r.get(c.kName, "ms-median")
			if !ok {
				continue
			}
			bound, dd, kk = append(bound, b), append(dd, d), append(kk, k)
			names = append(names, c.label)
		}
		if len(names) == 0 {
			return fmt.Errorf("no failover figures")
		}
		pl := plot.New()
		pl.Title.Text = p.title
		pl.Y.Label.Text = "failover time (ms)"
		w := vg.Points(22)
		for i, s := range []struct {
			v   plotter.Values
			c   color.Color
			lbl string
		}{{bound, grey, "protocol's bound"}, {dd, blue, "directord"}, {kk, red, "keepalived 2.2.7"}} {
			bars, err := plotter.NewBarChart(s.v, w)
			if err != nil {
				return err
			}
			bars.Color, bars.LineStyle.Width = s.c, 0
			bars.Offset = w * vg.Length(i-1)
			pl.Add(bars)
			pl.Legend.Add(s.lbl, bars)
		}
		pl.Legend.Top = true
		pl.Legend.XOffs = -2.5 * vg.Inch // between the groups, clear of the bars
		pl.NominalX(names...)
		panels = append(panels, pl)
	}
	img := vgimg.New(9*vg.Inch, 7*vg.Inch)
	dc := draw.New(img)
	t := draw.Tiles{Rows: len(panels), Cols: 1, PadY: vg.Points(12), PadTop: vg.Points(6), PadBottom: vg.Points(6), PadLeft: vg.Points(6), PadRight: vg.Points(6)}
	cs := plot.Align([][]*plot.Plot{{panels[0]}, {panels[1]}}, t, dc)
	for i, pl := range panels {
		pl.Draw(cs[i][0])
	}
	return save(img, file)
}

func (r *results) checksPlot(file string) error {
	sizes := r.checkSizes()
	if len(sizes) == 0 {
		return fmt.Errorf("no health-check figures")
	}
	// The whole guest's CPU (the spinner's measure) where the run has it:
	// the guest's own accounting, in ticks of 10 ms, hardly sees
	// keepalived's checker below 200 real servers.
	unit, what := "cpu-s/s", "the daemon's CPU, as the guest's ticks count it"
	if _, ok := r.get(fmt.Sprintf("ChecksBesideKeepalived/rs=%d/keepalived", sizes[0]), "guest-cpu-s/s"); ok {
		unit, what = "guest-cpu-s/s", "the whole guest's CPU (daemon, HTTPS server, kernel)"
	}
	pl := plot.New()
	pl.Title.Text = "Health checks (SSL_GET every 2 s) in the UML guest: " + what
	pl.X.Label.Text = "real servers"
	pl.Y.Label.Text = "CPU (seconds per second)"
	for _, s := range []struct {
		who, lbl string
		c        color.Color
	}{{"directord", "directord", blue}, {"directord+reuse", "directord, reuse_connection " + reuseAge, green}, {"keepalived", "keepalived 2.2.7 (checker)", red}} {
		var xy plotter.XYs
		for _, n := range sizes {
			v, ok := r.get(fmt.Sprintf("ChecksBesideKeepalived/rs=%d/%s", n, s.who), unit)
			if ok {
				xy = append(xy, plotter.XY{X: float64(n), Y: v})
			}
		}
		if len(xy) == 0 {
			continue // not measured (directord+reuse before it existed)
		}
		line, pts, err := plotter.NewLinePoints(xy)
		if err != nil {
			return err
		}
		line.Color, pts.Color = s.c, s.c
		pl.Add(line, pts)
		pl.Legend.Add(s.lbl, line, pts)
	}
	pl.Legend.Top, pl.Legend.Left = true, true
	pl.Y.Min = 0
	pl.X.Scale = plot.LogScale{}
	var ticks []plot.Tick
	for _, n := range sizes {
		ticks = append(ticks, plot.Tick{Value: float64(n), Label: fmt.Sprint(n)})
	}
	pl.X.Tick.Marker = plot.ConstantTicks(ticks)
	img := vgimg.New(8*vg.Inch, 5*vg.Inch)
	pl.Draw(draw.New(img))
	return save(img, file)
}

func save(img *vgimg.Canvas, file string) error {
	f, err := os.Create(file)
	if err != nil {
		return err
	}
	if _, err := (vgimg.PngCanvas{Canvas: img}).WriteTo(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
