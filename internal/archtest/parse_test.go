package archtest

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"
	"strings"
)

// row is one line of the doc's package table.
type row struct {
	pkg   string // the path inside the module, e.g. internal/config
	floor int
	line  int // 1-based, for messages
}

// docPath is one subsection of `## Paths` and the names it gives.
type docPath struct {
	title string
	names []string
	line  int
}

// archDoc is what the checker reads from docs/architecture.md.
type archDoc struct {
	lines []string
	rows  []row
	// floorsFrom and floorsTo bound the content lines of the `## Floors`
	// fenced block (lines[floorsFrom:floorsTo]); both are -1 when absent.
	floorsFrom, floorsTo int
	paths                []docPath
}

var (
	tableHeader = regexp.MustCompile(`^\|\s*package\s*\|\s*floor\s*\|\s*owns\s*\|\s*$`)
	codeSpan    = regexp.MustCompile("`([^`]+)`")
	// funcName is what a code span in `## Paths` must look like to be read
	// as a function: pkg.Func or pkg.Type.Method, pkg possibly a path.
	funcName = regexp.MustCompile(`^([a-z][a-z0-9_]*(?:/[a-z][a-z0-9_]*)*)\.([A-Za-z_]\w*(?:\.[A-Za-z_]\w*)?)(?:\(\))?$`)
)

// parseDoc reads the package table, the Floors block and the Paths
// subsections. It fails only on a doc whose shape it cannot read.
func parseDoc(text string) (*archDoc, error) {
	d := &archDoc{lines: strings.Split(text, "\n"), floorsFrom: -1, floorsTo: -1}
	section := ""
	var cur *docPath
	inFence := false
	for i := 0; i < len(d.lines); i++ {
		l := d.lines[i]
		if strings.HasPrefix(l, "```") {
			inFence = !inFence
			if section == "Floors" && d.floorsFrom < 0 && inFence {
				d.floorsFrom = i + 1
			} else if section == "Floors" && d.floorsTo < 0 && !inFence {
				d.floorsTo = i
			}
			continue
		}
		if inFence {
			continue
		}
		if strings.HasPrefix(l, "## ") {
			section = strings.TrimSpace(strings.TrimPrefix(l, "## "))
			cur = nil
			continue
		}
		if section == "Paths" && strings.HasPrefix(l, "### ") {
			d.paths = append(d.paths, docPath{title: strings.TrimSpace(strings.TrimPrefix(l, "### ")), line: i + 1})
			cur = &d.paths[len(d.paths)-1]
			continue
		}
		if cur != nil {
			for _, m := range codeSpan.FindAllStringSubmatch(l, -1) {
				if funcName.MatchString(m[1]) {
					cur.names = append(cur.names, strings.TrimSuffix(m[1], "()"))
				}
			}
		}
		if tableHeader.MatchString(strings.TrimSpace(l)) {
			if d.rows != nil {
				return nil, fmt.Errorf("line %d: a second package table", i+1)
			}
			rows, next, err := parseTable(d.lines, i+2)
			if err != nil {
				return nil, err
			}
			d.rows, i = rows, next-1
		}
	}
	if d.rows == nil {
		return nil, fmt.Errorf("no package table: want a header line %q", "| package | floor | owns |")
	}
	if d.floorsFrom < 0 || d.floorsTo < 0 {
		return nil, fmt.Errorf("no fenced block under a %q heading", "## Floors")
	}
	return d, nil
}

// parseTable reads rows from lines[from:] up to the first line that is not a
// table line, and returns the index of that line.
func parseTable(lines []string, from int) ([]row, int, error) {
	rows := []row{}
	i := from
	for ; i < len(lines) && strings.HasPrefix(strings.TrimSpace(lines[i]), "|"); i++ {
		cells := strings.Split(strings.Trim(strings.TrimSpace(lines[i]), "|"), "|")
		if len(cells) < 3 {
			return nil, 0, fmt.Errorf("line %d: a table row needs three cells (package, floor, owns)", i+1)
		}
		pkg := strings.Trim(strings.TrimSpace(cells[0]), "`")
		floor, err := strconv.Atoi(strings.TrimSpace(cells[1]))
		if err != nil || floor < 0 {
			return nil, 0, fmt.Errorf("line %d: package %s: the floor %q is not an integer >= 0", i+1, pkg, strings.TrimSpace(cells[1]))
		}
		rows = append(rows, row{pkg: pkg, floor: floor, line: i + 1})
	}
	return rows, i, nil
}

// floorsBlock is the Floors diagram the table implies: floors top to bottom,
// each with its packages, wrapped at 78 columns.
func floorsBlock(rows []row) []string {
	byFloor := map[int][]string{}
	top := 0
	for _, r := range rows {
		byFloor[r.floor] = append(byFloor[r.floor], r.pkg)
		top = max(top, r.floor)
	}
	var out []string
	for f := top; f >= 0; f-- {
		pkgs := byFloor[f]
		if len(pkgs) == 0 {
			continue
		}
		slices.Sort(pkgs)
		line := fmt.Sprintf("floor %-2d", f)
		indent := strings.Repeat(" ", len(line))
		onLine := 0 // packages on line
		for i, p := range pkgs {
			word := p
			if i < len(pkgs)-1 {
				word += ","
			}
			if onLine > 0 && len(line)+1+len(word) > 78 {
				out = append(out, line)
				line, onLine = indent, 0
			}
			line += " " + word
			onLine++
		}
		out = append(out, line)
	}
	return out
}

// withFloors returns the doc's text with its Floors block replaced by block.
func (d *archDoc) withFloors(block []string) string {
	out := append([]string{}, d.lines[:d.floorsFrom]...)
	out = append(out, block...)
	out = append(out, d.lines[d.floorsTo:]...)
	return strings.Join(out, "\n")
}
