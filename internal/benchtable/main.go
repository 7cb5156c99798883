// Command benchtable runs a `go test -bench` command line, passes its output
// through, and then prints one table of medians: for every benchmark and
// every unit it reported (ns/op, B/op, p50-ns, ...), the median over the
// -count runs and, where the benchmark has a sibling sub-benchmark named
// "baseline", the ratio of its median to the baseline's median for the same
// unit. `make bench` uses it.
//
//	go run ./internal/benchtable -- go test -run '^$' -bench . -count 5 ./...
package main

import (
	"bufio"
	"fmt"
	"io"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"text/tabwriter"
)

func main() {
	args := os.Args[1:]
	if len(args) > 0 && args[0] == "--" {
		args = args[1:]
	}
	if len(args) == 0 {
		fmt.Fprintln(os.Stderr, "usage: benchtable -- go test -bench ... ")
		os.Exit(64)
	}
	cmd := exec.Command(args[0], args[1:]...)
	cmd.Stderr = os.Stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(os.Stderr, "benchtable:", err)
		os.Exit(1)
	}
	res := parse(io.TeeReader(out, os.Stdout))
	runErr := cmd.Wait()
	fmt.Println()
	render(os.Stdout, res)
	if runErr != nil {
		fmt.Fprintln(os.Stderr, "benchtable: benchmark command failed:", runErr)
		os.Exit(1)
	}
}

// results maps "pkg.BenchmarkName/sub" to unit to samples, keeping first-seen order.
type results struct {
	order   []string
	samples map[string]map[string][]float64
	units   map[string][]string
}

func parse(r io.Reader) *results {
	res := &results{samples: map[string]map[string][]float64{}, units: map[string][]string{}}
	pkg := ""
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 1<<20), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		if rest, ok := strings.CutPrefix(line, "pkg: "); ok {
			pkg = rest[strings.LastIndex(rest, "/")+1:]
			continue
		}
		f := strings.Fields(line)
		if len(f) < 4 || !strings.HasPrefix(f[0], "Benchmark") {
			continue
		}
		if _, err := strconv.Atoi(f[1]); err != nil {
			continue
		}
		name := trimProcs(f[0])
		if pkg != "" {
			name = pkg + "." + name
		}
		if res.samples[name] == nil {
			res.samples[name] = map[string][]float64{}
			res.order = append(res.order, name)
		}
		for i := 2; i+1 < len(f); i += 2 {
			v, err := strconv.ParseFloat(f[i], 64)
			if err != nil {
				continue
			}
			unit := f[i+1]
			if res.samples[name][unit] == nil {
				res.units[name] = append(res.units[name], unit)
			}
			res.samples[name][unit] = append(res.samples[name][unit], v)
		}
	}
	return res
}

// trimProcs drops the -GOMAXPROCS suffix go test appends to names.
func trimProcs(name string) string {
	i := strings.LastIndex(name, "-")
	if i < 0 {
		return name
	}
	if _, err := strconv.Atoi(name[i+1:]); err != nil {
		return name
	}
	return name[:i]
}

func median(v []float64) float64 {
	s := append([]float64(nil), v...)
	sort.Float64s(s)
	n := len(s)
	if n%2 == 1 {
		return s[n/2]
	}
	return (s[n/2-1] + s[n/2]) / 2
}

// baselineOf names the sibling "baseline" benchmark of name, or "".
func baselineOf(name string) string {
	i := strings.LastIndex(name, "/")
	if i < 0 || name[i+1:] == "baseline" {
		return ""
	}
	return name[:i+1] + "baseline"
}

func render(w io.Writer, res *results) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "benchmark\tunit\tmedian\truns\tvs baseline\t")
	for _, name := range res.order {
		base := baselineOf(name)
		for _, unit := range res.units[name] {
			s := res.samples[name][unit]
			m := median(s)
			ratio := ""
			if bs, ok := res.samples[base][unit]; ok && base != "" {
				if bm := median(bs); bm != 0 {
					ratio = fmt.Sprintf("%.3fx", m/bm)
				}
			}
			fmt.Fprintf(tw, "%s\t%s\t%s\t%d\t%s\t\n", name, unit, format(m), len(s), ratio)
		}
	}
	tw.Flush()
}

func format(v float64) string {
	switch {
	case v >= 100:
		return strconv.FormatFloat(v, 'f', 0, 64)
	case v >= 1:
		return strconv.FormatFloat(v, 'f', 2, 64)
	default:
		return strconv.FormatFloat(v, 'g', 3, 64)
	}
}
