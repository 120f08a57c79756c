package runbook

import (
	"fmt"
	"sort"
	"strings"

	"github.com/expr-lang/expr"
	"github.com/expr-lang/expr/ast"
	"github.com/expr-lang/expr/parser"
	"github.com/expr-lang/expr/vm"

	"github.com/meshtriage/meshtriage/probes"
)

// condition is a compiled expression over facts with the facts it reads.
type condition struct {
	source  string
	program *vm.Program
	facts   []string
	// terms are the top-level "&&" terms of a boolean condition with more
	// than one, each compiled on its own: with a fact unknown, a known term
	// that is false still rules the condition out.
	terms []*condition
	// zeroTrue: the condition holds when every fact is at its zero value
	// (a guard such as "pods_terminating == 0"), so its holding is no
	// evidence for anything.
	zeroTrue bool
}

// compileCondition type-checks src against the catalogue's zero values, so a
// misspelt fact or a comparison of a list with an int fails when the runbook
// loads. asBool requires a boolean result (branch and verification rules).
func compileCondition(src string, cat map[string]probes.FactType, asBool bool) (*condition, error) {
	if strings.TrimSpace(src) == "" {
		return nil, fmt.Errorf("empty expression")
	}
	env := make(map[string]any, len(cat))
	for name, typ := range cat {
		env[name] = typ.Zero()
	}
	opts := []expr.Option{expr.Env(env)}
	if asBool {
		opts = append(opts, expr.AsBool())
	}
	program, err := expr.Compile(src, opts...)
	if err != nil {
		return nil, fmt.Errorf("%s", oneLine(err.Error()))
	}
	tree, err := parser.Parse(src)
	if err != nil {
		return nil, fmt.Errorf("%s", oneLine(err.Error()))
	}
	c := &condition{source: src, program: program, facts: referencedFacts(tree.Node, cat)}
	if out, err := expr.Run(program, env); err == nil && out == true {
		c.zeroTrue = true
	}
	if asBool {
		if nodes := conjuncts(tree.Node); len(nodes) > 1 {
			for _, n := range nodes {
				term, err := compileCondition(n.String(), cat, true)
				if err != nil {
					// A term that does not stand alone: the condition is
					// judged whole.
					c.terms = nil
					break
				}
				c.terms = append(c.terms, term)
			}
		}
	}
	return c, nil
}

// conjuncts splits a condition at its top-level "&&".
func conjuncts(n ast.Node) []ast.Node {
	if b, ok := n.(*ast.BinaryNode); ok && (b.Operator == "&&" || b.Operator == "and") {
		return append(conjuncts(b.Left), conjuncts(b.Right)...)
	}
	return []ast.Node{n}
}

// couldHold says whether the condition can still match once its unknown
// facts are read: not when a term whose facts are known is false. support
// are the known terms that hold and say something (not guards that hold in
// an empty world): the evidence the condition has so far, of terms in all.
func (c *condition) couldHold(facts probes.Facts) (could bool, support []string, terms int) {
	for _, t := range c.terms {
		if len(missingFacts(t.facts, facts)) > 0 {
			continue
		}
		out, err := t.eval(facts)
		if err != nil {
			continue
		}
		if out != true {
			return false, nil, len(c.terms)
		}
		if !t.zeroTrue {
			support = append(support, t.source)
		}
	}
	return true, support, max(1, len(c.terms))
}

// referencedFacts walks the expression's syntax tree for identifiers that
// name catalogue facts: the inputs that must be known for the rule to decide.
func referencedFacts(node ast.Node, cat map[string]probes.FactType) []string {
	v := &identCollector{cat: cat, seen: map[string]bool{}}
	ast.Walk(&node, v)
	sort.Strings(v.names)
	return v.names
}

type identCollector struct {
	cat   map[string]probes.FactType
	seen  map[string]bool
	names []string
}

func (v *identCollector) Visit(node *ast.Node) {
	id, ok := (*node).(*ast.IdentifierNode)
	if !ok {
		return
	}
	if _, isFact := v.cat[id.Value]; isFact && !v.seen[id.Value] {
		v.seen[id.Value] = true
		v.names = append(v.names, id.Value)
	}
}

// eval runs the condition over facts. The caller has checked that every
// referenced fact is known.
func (c *condition) eval(facts probes.Facts) (any, error) {
	out, err := expr.Run(c.program, map[string]any(facts))
	if err != nil {
		return nil, fmt.Errorf("%s", oneLine(err.Error()))
	}
	return out, nil
}

// reasonPart is literal text or, with expr set, an interpolated expression.
type reasonPart struct {
	text string
	expr *condition
}

// compileReason splits "a {x} b" into parts and compiles each {expression}.
// "{{" and "}}" stand for literal braces.
func compileReason(src string, cat map[string]probes.FactType) ([]reasonPart, error) {
	var parts []reasonPart
	var lit strings.Builder
	for i := 0; i < len(src); i++ {
		ch := src[i]
		switch {
		case ch == '{' && i+1 < len(src) && src[i+1] == '{':
			lit.WriteByte('{')
			i++
		case ch == '}' && i+1 < len(src) && src[i+1] == '}':
			lit.WriteByte('}')
			i++
		case ch == '{':
			end := strings.IndexByte(src[i+1:], '}')
			if end < 0 {
				return nil, fmt.Errorf("unclosed { at offset %d", i)
			}
			inner := src[i+1 : i+1+end]
			c, err := compileCondition(inner, cat, false)
			if err != nil {
				return nil, fmt.Errorf("{%s}: %w", inner, err)
			}
			if lit.Len() > 0 {
				parts = append(parts, reasonPart{text: lit.String()})
				lit.Reset()
			}
			parts = append(parts, reasonPart{expr: c})
			i += end + 1
		case ch == '}':
			return nil, fmt.Errorf("unmatched } at offset %d", i)
		default:
			lit.WriteByte(ch)
		}
	}
	if lit.Len() > 0 {
		parts = append(parts, reasonPart{text: lit.String()})
	}
	return parts, nil
}

// renderReason interpolates the parts; an unknown fact renders as "?".
func renderReason(parts []reasonPart, facts probes.Facts) string {
	var b strings.Builder
	for _, p := range parts {
		if p.expr == nil {
			b.WriteString(p.text)
			continue
		}
		if len(missingFacts(p.expr.facts, facts)) > 0 {
			b.WriteString("?")
			continue
		}
		v, err := p.expr.eval(facts)
		if err != nil {
			b.WriteString("?")
			continue
		}
		b.WriteString(FormatValue(v))
	}
	return b.String()
}

// FormatValue renders a fact value the way reports show it.
func FormatValue(v any) string {
	switch x := v.(type) {
	case nil:
		return "?"
	case string:
		return x
	case []string:
		if len(x) == 0 {
			return "none"
		}
		return strings.Join(x, ", ")
	case []any:
		s := make([]string, len(x))
		for i, e := range x {
			s[i] = FormatValue(e)
		}
		return FormatValue(s)
	case float64:
		return fmt.Sprintf("%g", x)
	}
	return fmt.Sprint(v)
}

func missingFacts(names []string, facts probes.Facts) []string {
	var out []string
	for _, n := range names {
		if _, ok := facts[n]; !ok {
			out = append(out, n)
		}
	}
	return out
}

func oneLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.IndexByte(s, '\n'); i >= 0 {
		s = s[:i]
	}
	return s
}
