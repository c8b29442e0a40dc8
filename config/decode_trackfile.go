package config

import (
	"strconv"
	"strings"
)

// track_file: the top-level block (vrrp_track_file its deprecated
// synonym) and the instance's and sync group's track_file { } lists, read
// as keepalived 2.2.7's trackers/track_file.c reads them.

func init() {
	topBlock.keys["track_file"] = func(d *decoder, n *Node, c *Config) { d.trackFile(n, c) }
	topBlock.keys["vrrp_track_file"] = func(d *decoder, n *Node, c *Config) {
		d.rep.warnf(n.Pos, n.Keyword, "deprecated: read as track_file")
		d.trackFile(n, c)
	}
	instanceBlock.keys["track_file"] = func(d *decoder, n *Node, in *Instance) {
		in.TrackFiles = append(in.TrackFiles, d.trackFileUses(n)...)
	}
	syncGroupBlock.keys["track_file"] = func(d *decoder, n *Node, g *SyncGroup) {
		g.TrackFiles = append(g.TrackFiles, d.trackFileUses(n)...)
	}
}

func (d *decoder) trackFile(n *Node, c *Config) {
	name, ok := d.named(n)
	if !ok {
		return
	}
	tf := &TrackFile{Pos: n.Pos, Name: name, Weight: 1}
	walk(d, n, trackFileBlock, tf)
	if tf.Path == "" {
		d.rep.warnf(n.Pos, n.Keyword, "%s has no file: ignored, as keepalived does", name)
		return
	}
	for _, o := range c.TrackFiles {
		if o.Name == name {
			// keepalived finds the first of the name.
			d.rep.warnf(n.Pos, n.Keyword, "%s is already defined at %s: this one is never used", name, o.Pos)
		}
	}
	c.TrackFiles = append(c.TrackFiles, tf)
}

var trackFileBlock = &block[TrackFile]{
	name: "track_file",
	keys: map[string]func(*decoder, *Node, *TrackFile){
		"file": func(d *decoder, n *Node, tf *TrackFile) {
			if tf.Path != "" {
				d.rep.warnf(n.Pos, n.Keyword, "file already set for %s: ignored, as keepalived does", tf.Name)
				return
			}
			tf.Path, _ = d.str(n)
		},
		"weight": func(d *decoder, n *Node, tf *TrackFile) {
			if !d.noBlock(n) || !d.want(n, 1, 2) {
				return
			}
			w, err := strconv.Atoi(n.Args[0])
			if err != nil || w < -254 || w > 254 {
				d.rep.warnf(n.Pos, n.Keyword, "%q is not in -254..254: weight 1 used, as keepalived does", n.Args[0])
				w = 1
			}
			tf.Weight = w
			if len(n.Args) == 2 {
				if n.Args[1] == "reverse" {
					tf.Reverse = true
				} else {
					d.rep.warnf(n.Pos, n.Keyword, "%q is not reverse: ignored, as keepalived does", n.Args[1])
				}
			}
		},
		"init_file": func(d *decoder, n *Node, tf *TrackFile) {
			if !d.noBlock(n) {
				return
			}
			tf.Init, tf.InitValue, tf.InitOverwrite = true, 0, false
			for _, w := range n.Args {
				switch {
				case w == "overwrite":
					tf.InitOverwrite = true
				case w != "" && (w[0] == '-' || w[0] >= '0' && w[0] <= '9'):
					v, err := strconv.ParseInt(w, 10, 32)
					if err != nil {
						d.rep.warnf(n.Pos, n.Keyword, "init value %q is not a number: 0 used, as keepalived does", w)
						v = 0
					} else if v < -254 || v > 254 {
						d.rep.warnf(n.Pos, n.Keyword, "init value %d is outside -254..254", v)
					}
					tf.InitValue = int(v)
				default:
					d.rep.warnf(n.Pos, n.Keyword, "unknown option %q: ignored, as keepalived does", w)
				}
			}
		},
	},
}

// trackFileUses reads an instance's or sync group's track_file block:
// "NAME [weight W [reverse|noreverse]]", W in -254..254.
func (d *decoder) trackFileUses(n *Node) []TrackFileUse {
	d.want(n, 0, 0)
	var out []TrackFileUse
	d.lines(n, func(c *Node) {
		u := TrackFileUse{Name: c.Keyword, pos: c.Pos}
		if len(c.Args) > 0 {
			if c.Args[0] != "weight" || len(c.Args) < 2 || len(c.Args) > 3 {
				d.rep.warnf(c.Pos, c.Keyword, "expected \"%s [weight W [reverse|noreverse]]\", got %q: ignored, as keepalived does", c.Keyword, strings.Join(c.Args, " "))
				return
			}
			w, err := strconv.Atoi(c.Args[1])
			if err != nil || w < -254 || w > 254 {
				d.rep.warnf(c.Pos, c.Keyword, "weight %q is not in -254..254: the file's weight is used, as keepalived does", c.Args[1])
			} else {
				u.Weight, u.set = w, true
			}
			if len(c.Args) == 3 {
				switch c.Args[2] {
				case "reverse":
					u.Reverse = true
				case "noreverse":
				default:
					d.rep.warnf(c.Pos, c.Keyword, "%q is not reverse or noreverse: ignored, as keepalived does", c.Args[2])
					return
				}
			}
		}
		out = append(out, u)
	})
	return out
}

// resolveTrackFiles gives each track_file entry its file's weight where
// it names none, drops entries naming no file (keepalived: "track file
// NAME not found, ignoring...") and duplicates, and applies keepalived's
// rule for sync group members (without sync_group_tracking_weight) and
// address owners: the default weight 1 becomes 0, another weight drops
// the entry; a sync group's own entries get weight 0 when a member owns
// its addresses. Members then track their group's files too: an entry of
// the group replaces the member's own for the same file unless that one
// has weight 0 (the vrrp package merges them).
func (d *decoder) resolveTrackFiles() {
	files := map[string]*TrackFile{}
	for _, tf := range d.cfg.TrackFiles {
		if files[tf.Name] == nil {
			files[tf.Name] = tf
		}
	}
	fill := func(owner string, list []TrackFileUse) []TrackFileUse {
		var out []TrackFileUse
		seen := map[string]bool{}
		for _, u := range list {
			tf := files[u.Name]
			if tf == nil {
				d.rep.warnf(u.pos, "track_file", "(%s) track file %s not found: ignored, as keepalived does%s", owner, u.Name, didYouMean(u.Name, keys(files)))
				continue
			}
			if seen[u.Name] {
				d.rep.warnf(u.pos, "track_file", "(%s) duplicate track_file %s: ignored, as keepalived does", owner, u.Name)
				continue
			}
			seen[u.Name] = true
			if !u.set {
				u.Weight, u.Reverse = tf.Weight, tf.Reverse
				u.set = true
			}
			out = append(out, u)
		}
		return out
	}
	groups := map[string]*SyncGroup{}
	for _, g := range d.cfg.SyncGroups {
		g.TrackFiles = fill(g.Name, g.TrackFiles)
		groups[g.Name] = g
	}
	owner := map[string]bool{} // sync groups with an address owner
	for _, in := range d.cfg.Instances {
		in.TrackFiles = fill(in.Name, in.TrackFiles)
		g := groups[in.SyncGroup]
		if in.Priority == 255 && g != nil {
			owner[g.Name] = true
		}
		if !(g != nil && !g.TrackingWeight) && in.Priority != 255 {
			continue
		}
		why := "it is in sync group " + in.SyncGroup
		if g == nil || g.TrackingWeight {
			why = "it owns its addresses (priority 255)"
		}
		kept := in.TrackFiles[:0]
		for _, u := range in.TrackFiles {
			switch u.Weight {
			case 0:
			case 1:
				d.rep.warnf(u.pos, "track_file", "(%s) track file %s: weight 0 used since %s, as keepalived does (give weight 0)", in.Name, u.Name, why)
				u.Weight = 0
			default:
				d.rep.warnf(u.pos, "track_file", "(%s) track file %s with weight %d ignored since %s, as keepalived does", in.Name, u.Name, u.Weight, why)
				continue
			}
			kept = append(kept, u)
		}
		in.TrackFiles = kept
	}
	for _, g := range d.cfg.SyncGroups {
		if !owner[g.Name] {
			continue
		}
		for i := range g.TrackFiles {
			if g.TrackFiles[i].Weight != 0 {
				d.rep.warnf(g.TrackFiles[i].pos, "track_file", "(%s) track file %s: weight 0 used since a member owns its addresses (priority 255), as keepalived does", g.Name, g.TrackFiles[i].Name)
				g.TrackFiles[i].Weight = 0
			}
		}
	}
}
