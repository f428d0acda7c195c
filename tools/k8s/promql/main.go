// promql parses PromQL expressions with Prometheus's own parser and prints the metric
// names each one selects: a JSON array of strings on stdin, a JSON array on stdout of
// {"expr": ..., "metrics": [...], "error": "..."} in the same order. Exit 0 even when
// an expression is invalid: the caller (tests/unit/test_chart_observability.py) names
// the bad one.
//
// Why a binary: the chart's alert rules and dashboard queries must be PromQL that
// Prometheus accepts and must name only series the operator exports; the parser of
// github.com/prometheus/prometheus is the definition of both.
package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"sort"

	"github.com/prometheus/prometheus/model/labels"
	"github.com/prometheus/prometheus/promql/parser"
)

type checked struct {
	Expr    string   `json:"expr"`
	Metrics []string `json:"metrics"`
	Error   string   `json:"error,omitempty"`
}

func metricsOf(expr parser.Expr) []string {
	seen := map[string]bool{}
	parser.Inspect(expr, func(node parser.Node, _ []parser.Node) error {
		if vs, ok := node.(*parser.VectorSelector); ok {
			name := vs.Name
			for _, m := range vs.LabelMatchers {
				if m.Name == labels.MetricName {
					name = m.Value
				}
			}
			seen[name] = true
		}
		return nil
	})
	names := make([]string, 0, len(seen))
	for name := range seen {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

func main() {
	raw, err := io.ReadAll(os.Stdin)
	if err != nil {
		fail("reading stdin: %v", err)
	}
	var exprs []string
	if err := json.Unmarshal(raw, &exprs); err != nil {
		fail("stdin is not a JSON array of strings: %v", err)
	}
	p := parser.NewParser(parser.Options{})
	out := make([]checked, 0, len(exprs))
	for _, text := range exprs {
		expr, err := p.ParseExpr(text)
		if err != nil {
			out = append(out, checked{Expr: text, Metrics: []string{}, Error: err.Error()})
			continue
		}
		out = append(out, checked{Expr: text, Metrics: metricsOf(expr)})
	}
	encoded, _ := json.Marshal(out)
	fmt.Println(string(encoded))
}

func fail(format string, args ...interface{}) {
	fmt.Fprintf(os.Stderr, "promql: "+format+"\n", args...)
	os.Exit(2)
}
