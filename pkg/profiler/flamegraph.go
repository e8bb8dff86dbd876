package profiler

import (
	"bytes"
	"encoding/xml"
	"fmt"
	"hash/fnv"
	"io"
	"math"
	"strconv"
	"strings"
	"unicode/utf8"

	"github.com/google/pprof/profile"
)

// Flame graph geometry, in pixels.
const (
	fgWidth    = 1200.0
	fgPad      = 10.0
	fgTitleH   = 50.0 // title and subtitle above the frames
	fgLegendH  = 24.0 // legend below them
	fgFrameH   = 16.0
	fgFontSize = 12.0
	// fgCharW is the advance of one monospace character at fgFontSize,
	// rounded up so truncated names never overflow their frame.
	fgCharW = 7.3
	// fgMinW hides frames too thin to see or hover; their children are
	// thinner still.
	fgMinW = 0.3
)

// WriteFlameGraph draws p as a self-contained SVG flame graph: the root at
// the bottom, callees above their callers, each frame as wide as its share
// of the samples. Hovering a frame shows its full name, sample count and
// percentage. The same profile always gives the same bytes.
func WriteFlameGraph(w io.Writer, p *profile.Profile, title string) error {
	root := flameTree(p)
	depth := visibleDepth(root, fgWidth-2*fgPad)
	height := fgTitleH + float64(depth+1)*fgFrameH + fgLegendH + fgPad

	var b bytes.Buffer
	fmt.Fprintf(&b, `<?xml version="1.0" encoding="UTF-8" standalone="no"?>
<svg xmlns="http://www.w3.org/2000/svg" version="1.1" width="%s" height="%s" viewBox="0 0 %s %s">
<style>
text { font-family: "DejaVu Sans Mono", Menlo, Consolas, monospace; font-size: %spx; fill: #000; }
.title { font-size: 17px; font-family: sans-serif; }
.sub { font-size: 12px; font-family: sans-serif; fill: #555; }
.f text { pointer-events: none; }
.f:hover rect { stroke: #000; stroke-width: 0.7; }
</style>
`, num(fgWidth), num(height), num(fgWidth), num(height), num(fgFontSize))
	b.WriteString("<title>")
	escape(&b, title)
	b.WriteString("</title>\n")
	fmt.Fprintf(&b, `<rect x="0" y="0" width="%s" height="%s" fill="#f8f8f2"/>`+"\n", num(fgWidth), num(height))
	fmt.Fprintf(&b, `<text class="title" x="%s" y="24" text-anchor="middle">`, num(fgWidth/2))
	escape(&b, title)
	b.WriteString("</text>\n")
	fmt.Fprintf(&b, `<text class="sub" x="%s" y="42" text-anchor="middle">`, num(fgWidth/2))
	escape(&b, subtitle(p, root.value))
	b.WriteString("</text>\n")

	if root.value == 0 {
		fmt.Fprintf(&b, `<text x="%s" y="%s" text-anchor="middle">no samples</text>`+"\n", num(fgWidth/2), num(fgTitleH+fgFrameH))
	} else {
		baseY := fgTitleH + float64(depth)*fgFrameH
		scale := (fgWidth - 2*fgPad) / float64(root.value)
		drawFrame(&b, root, root.value, fgPad, baseY, scale)
	}
	drawLegend(&b, height-fgPad-fgLegendH/2)
	b.WriteString("</svg>\n")

	if _, err := w.Write(b.Bytes()); err != nil {
		return fmt.Errorf("write flame graph: %w", err)
	}
	return nil
}

func subtitle(p *profile.Profile, total int64) string {
	vi := valueIndex(p)
	unit := "samples"
	if vi < len(p.SampleType) && p.SampleType[vi].Type != "samples" {
		unit = p.SampleType[vi].Type + " " + p.SampleType[vi].Unit
	}
	return fmt.Sprintf("%d %s. Width is the share of samples; callers below, callees above. Hover for details.", total, unit)
}

// drawFrame draws n at (x, y) and its children above it.
func drawFrame(b *bytes.Buffer, n *flameNode, total int64, x, y, scale float64) {
	w := float64(n.value) * scale
	pct := 100 * float64(n.value) / float64(total)
	b.WriteString(`<g class="f"><title>`)
	escape(b, fmt.Sprintf("%s (%s, %.2f%%)", n.name, plural(n.value, "sample"), pct))
	fmt.Fprintf(b, `</title><rect x="%s" y="%s" width="%s" height="%s" rx="2" fill="%s"/>`,
		num(x), num(y), num(w), num(fgFrameH-1), frameColour(n))
	if label := fitLabel(shortName(n), w); label != "" {
		fmt.Fprintf(b, `<text x="%s" y="%s">`, num(x+3), num(y+fgFrameH-4.5))
		escape(b, label)
		b.WriteString("</text>")
	}
	b.WriteString("</g>\n")
	for _, c := range n.sortedChildren() {
		if cw := float64(c.value) * scale; cw >= fgMinW {
			drawFrame(b, c, total, x, y-fgFrameH, scale)
		}
		x += float64(c.value) * scale
	}
}

// visibleDepth is the height of the tree counting only frames wide enough
// to draw.
func visibleDepth(root *flameNode, width float64) int {
	if root.value == 0 {
		return 0
	}
	scale := width / float64(root.value)
	var walk func(n *flameNode) int
	walk = func(n *flameNode) int {
		d := 0
		for _, c := range n.children {
			if float64(c.value)*scale >= fgMinW {
				d = max(d, 1+walk(c))
			}
		}
		return d
	}
	return walk(root)
}

// shortName drops the import path from Go (and JVM) names for the label,
// "github.com/x/y/pkg.F" becoming "pkg.F"; the hover title keeps it.
func shortName(n *flameNode) string {
	if n.class != classUser && n.class != classJIT {
		return n.name
	}
	end := strings.IndexAny(n.name, "([<")
	if end < 0 {
		end = len(n.name)
	}
	return n.name[strings.LastIndex(n.name[:end], "/")+1:]
}

// fitLabel truncates name to what fits in a frame w pixels wide, or
// returns "" when not even a few characters would.
func fitLabel(name string, w float64) string {
	fit := int((w - 6) / fgCharW)
	if fit < 3 {
		return ""
	}
	if utf8.RuneCountInString(name) <= fit {
		return name
	}
	r := []rune(name)
	return string(r[:fit-2]) + ".."
}

func drawLegend(b *bytes.Buffer, y float64) {
	items := []struct {
		class frameClass
		label string
	}{
		{classUser, "user code"}, {classKernel, "kernel"}, {classJIT, "JIT (perf map)"}, {classUnresolved, "unresolved"},
	}
	x := fgPad
	for _, it := range items {
		fmt.Fprintf(b, `<rect x="%s" y="%s" width="12" height="12" fill="%s"/>`, num(x), num(y-6), palette(it.class, 0.5, 0.5, 0.5))
		fmt.Fprintf(b, `<text class="sub" x="%s" y="%s">%s</text>`+"\n", num(x+16), num(y+4), it.label)
		x += 16 + float64(len(it.label))*7 + 24
	}
}

// frameColour varies the shade by name, so neighbours differ and one
// function has one colour everywhere, and the hue by class.
func frameColour(n *flameNode) string {
	h := fnv.New32a()
	h.Write([]byte(n.name))
	v := h.Sum32()
	v1 := float64(v&0xff) / 255
	v2 := float64(v>>8&0xff) / 255
	v3 := float64(v>>16&0xff) / 255
	return palette(n.class, v1, v2, v3)
}

func palette(c frameClass, v1, v2, v3 float64) string {
	var r, g, bl float64
	switch c {
	case classKernel: // blue-green
		r, g, bl = 50+60*v1, 165+55*v1, 165+55*v1
	case classJIT: // green
		r, g, bl = 50+60*v1, 190+60*v2, 50+60*v1
	case classUnresolved: // grey
		r = 185 + 40*v1
		g, bl = r, r
	default: // warm
		r, g, bl = 205+50*v3, 230*v1, 55*v2
	}
	return fmt.Sprintf("rgb(%d,%d,%d)", int(r), int(g), int(bl))
}

// num formats a coordinate compactly and the same way every time.
func num(f float64) string { return strconv.FormatFloat(math.Round(f*100)/100, 'f', -1, 64) }

func escape(b *bytes.Buffer, s string) {
	// EscapeText only fails on a failing writer; a Buffer never fails.
	_ = xml.EscapeText(b, []byte(s))
}

func plural(n int64, what string) string {
	if n == 1 {
		return "1 " + what
	}
	return strconv.FormatInt(n, 10) + " " + what + "s"
}
