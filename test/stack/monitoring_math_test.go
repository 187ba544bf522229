package stack_test

import (
	"fmt"
	"regexp"
	"strings"
)

// evalMath evaluates a CloudWatch metric math expression on one data point
// of each series in env (a series not in env has no data point): numbers,
// + - * /, comparisons (1 or 0), parentheses, IF(c, a, b) and FILL(x, v).
// ok is false when the result has no data point.
func evalMath(expr string, env map[string]float64) (v float64, ok bool, err error) {
	p := &mathParser{toks: mathTokens.FindAllString(expr, -1), env: env}
	if strings.Join(p.toks, "") != strings.Join(strings.Fields(expr), "") {
		return 0, false, fmt.Errorf("unexpected characters")
	}
	r := p.cmp()
	if p.err == nil && p.i != len(p.toks) {
		p.err = fmt.Errorf("unexpected %q", p.toks[p.i])
	}
	return r.v, r.ok, p.err
}

var mathTokens = regexp.MustCompile(`[0-9]+(?:\.[0-9]+)?|[A-Za-z_][A-Za-z0-9_]*|>=|<=|==|!=|[-+*/(),<>]`)

type mathValue struct {
	v  float64
	ok bool
}

type mathParser struct {
	toks []string
	i    int
	env  map[string]float64
	err  error
}

func (p *mathParser) peek() string {
	if p.i < len(p.toks) {
		return p.toks[p.i]
	}
	return ""
}

func (p *mathParser) next() string {
	s := p.peek()
	p.i++
	return s
}

func (p *mathParser) expect(s string) {
	if got := p.next(); got != s && p.err == nil {
		p.err = fmt.Errorf("want %q, got %q", s, got)
	}
}

func both(a, b mathValue, f func(x, y float64) float64) mathValue {
	if !a.ok || !b.ok {
		return mathValue{}
	}
	return mathValue{f(a.v, b.v), true}
}

func b01(b bool) float64 {
	if b {
		return 1
	}
	return 0
}

func (p *mathParser) cmp() mathValue {
	a := p.add()
	ops := map[string]func(x, y float64) float64{
		">=": func(x, y float64) float64 { return b01(x >= y) },
		"<=": func(x, y float64) float64 { return b01(x <= y) },
		">":  func(x, y float64) float64 { return b01(x > y) },
		"<":  func(x, y float64) float64 { return b01(x < y) },
		"==": func(x, y float64) float64 { return b01(x == y) },
		"!=": func(x, y float64) float64 { return b01(x != y) },
	}
	if f, ok := ops[p.peek()]; ok {
		p.next()
		return both(a, p.add(), f)
	}
	return a
}

func (p *mathParser) add() mathValue {
	a := p.mul()
	for p.peek() == "+" || p.peek() == "-" {
		if p.next() == "+" {
			a = both(a, p.mul(), func(x, y float64) float64 { return x + y })
		} else {
			a = both(a, p.mul(), func(x, y float64) float64 { return x - y })
		}
	}
	return a
}

func (p *mathParser) mul() mathValue {
	a := p.unary()
	for p.peek() == "*" || p.peek() == "/" {
		if p.next() == "*" {
			a = both(a, p.unary(), func(x, y float64) float64 { return x * y })
			continue
		}
		b := p.unary()
		if b.ok && b.v == 0 {
			a = mathValue{} // CloudWatch drops a division by zero's point
			continue
		}
		a = both(a, b, func(x, y float64) float64 { return x / y })
	}
	return a
}

func (p *mathParser) unary() mathValue {
	tok := p.next()
	switch {
	case tok == "(":
		v := p.cmp()
		p.expect(")")
		return v
	case tok == "IF" || tok == "FILL":
		p.expect("(")
		var args []mathValue
		for {
			args = append(args, p.cmp())
			if p.peek() != "," {
				break
			}
			p.next()
		}
		p.expect(")")
		switch {
		case tok == "IF" && len(args) == 3:
			if !args[0].ok {
				return mathValue{}
			}
			if args[0].v != 0 {
				return args[1]
			}
			return args[2]
		case tok == "FILL" && len(args) == 2:
			if args[0].ok {
				return args[0]
			}
			return args[1]
		}
		if p.err == nil {
			p.err = fmt.Errorf("%s with %d arguments", tok, len(args))
		}
		return mathValue{}
	case tok != "" && (tok[0] >= '0' && tok[0] <= '9'):
		var f float64
		if _, err := fmt.Sscan(tok, &f); err != nil && p.err == nil {
			p.err = err
		}
		return mathValue{f, true}
	case tok != "" && tok[0] >= 'a' && tok[0] <= 'z':
		v, ok := p.env[tok]
		return mathValue{v, ok}
	}
	if p.err == nil {
		p.err = fmt.Errorf("unexpected %q (teach evalMath)", tok)
	}
	return mathValue{}
}
