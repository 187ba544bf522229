package stack_test

import (
	"errors"
	"fmt"
	"path"
	"regexp"
	"strings"
	"testing"
	"unicode"
)

// shellCommand is one simple command of a shell script: its words after
// quote removal and parameter expansion, and the directory it runs in,
// relative to the repository root.
type shellCommand struct {
	args []string
	dir  string
}

func (c shellCommand) String() string { return strings.Join(c.args, " ") }

// parseShell splits a script into simple commands, the way sh reads them,
// for the subset of sh the README and the init scripts use: words, '...'
// and "..." quotes, backslash escapes and line continuations, comments,
// `&&` and `;` lists, `cd`, `${NAME:-default}` and `$NAME` expansion (from
// lookup), and output redirections (dropped). Anything else (pipes, `||`,
// command substitution, ...) is an error, so that the test never silently
// reads a command otherwise than the shell would.
func parseShell(script string, lookup func(string) (string, bool)) ([]shellCommand, error) {
	var (
		cmds    []shellCommand
		words   []string
		word    strings.Builder
		inWord  bool
		dir     = "."
		runes   = []rune(script)
		quote   rune
		comment bool
	)
	endWord := func() {
		if inWord {
			words = append(words, word.String())
			word.Reset()
			inWord = false
		}
	}
	endCommand := func() error {
		endWord()
		// Drop redirections: ">file", "2>&1", "> file".
		var args []string
		for i := 0; i < len(words); i++ {
			w := words[i]
			if m := regexp.MustCompile(`^[0-9]?>>?(.*)$`).FindStringSubmatch(w); m != nil {
				if m[1] == "" {
					i++ // the target is the next word
				}
				continue
			}
			args = append(args, w)
		}
		words = nil
		if len(args) == 0 {
			return nil
		}
		if args[0] == "cd" {
			if len(args) != 2 {
				return fmt.Errorf("cd %v: want one directory", args[1:])
			}
			dir = path.Clean(path.Join(dir, args[1]))
			if dir == ".." || strings.HasPrefix(dir, "../") {
				return fmt.Errorf("cd %s leaves the repository", args[1])
			}
			return nil
		}
		cmds = append(cmds, shellCommand{args: args, dir: dir})
		return nil
	}
	expand := func(i int) (int, error) {
		// runes[i] == '$'
		if i+1 < len(runes) && runes[i+1] == '{' {
			end := strings.IndexRune(string(runes[i:]), '}')
			if end < 0 {
				return 0, errors.New("unterminated ${")
			}
			expr := string(runes[i+2 : i+end])
			name, def, hasDef := strings.Cut(expr, ":-")
			if !regexp.MustCompile(`^[A-Za-z_][A-Za-z0-9_]*$`).MatchString(name) {
				return 0, fmt.Errorf("unsupported expansion ${%s}", expr)
			}
			v, ok := lookup(name)
			if (!ok || v == "") && hasDef {
				v = def
			}
			word.WriteString(v)
			inWord = true
			return i + end, nil
		}
		j := i + 1
		for j < len(runes) && (runes[j] == '_' || unicode.IsLetter(runes[j]) || unicode.IsDigit(runes[j])) {
			j++
		}
		if j == i+1 {
			return 0, fmt.Errorf("unsupported $ at %q", string(runes[i:min(i+10, len(runes))]))
		}
		v, _ := lookup(string(runes[i+1 : j]))
		word.WriteString(v)
		inWord = true
		return j - 1, nil
	}
	for i := 0; i < len(runes); i++ {
		r := runes[i]
		if comment {
			if r == '\n' {
				comment = false
				if err := endCommand(); err != nil {
					return nil, err
				}
			}
			continue
		}
		switch quote {
		case '\'':
			if r == '\'' {
				quote = 0
			} else {
				word.WriteRune(r)
			}
			continue
		case '"':
			switch {
			case r == '"':
				quote = 0
			case r == '\\' && i+1 < len(runes) && strings.ContainsRune(`$"\`+"`", runes[i+1]):
				i++
				word.WriteRune(runes[i])
			case r == '\\' && i+1 < len(runes) && runes[i+1] == '\n':
				i++
			case r == '$':
				var err error
				if i, err = expand(i); err != nil {
					return nil, err
				}
			case r == '`':
				return nil, errors.New("command substitution is not supported")
			default:
				word.WriteRune(r)
			}
			continue
		}
		switch {
		case r == '\\' && i+1 < len(runes):
			i++
			if runes[i] != '\n' {
				word.WriteRune(runes[i])
				inWord = true
			}
		case r == '\'' || r == '"':
			quote = r
			inWord = true
		case r == '#' && !inWord:
			comment = true
		case r == '\n' || r == ';':
			if err := endCommand(); err != nil {
				return nil, err
			}
		case r == '&' && inWord && strings.HasSuffix(word.String(), ">"):
			word.WriteRune(r) // 2>&1
		case r == '&' && i+1 < len(runes) && runes[i+1] == '&':
			i++
			if err := endCommand(); err != nil {
				return nil, err
			}
		case r == '&' || r == '|' || r == '(' || r == ')' || r == '`' || r == '<':
			return nil, fmt.Errorf("unsupported shell syntax %q", string(runes[i:min(i+20, len(runes))]))
		case r == '$':
			if i+1 < len(runes) && runes[i+1] == '(' {
				return nil, errors.New("command substitution is not supported")
			}
			var err error
			if i, err = expand(i); err != nil {
				return nil, err
			}
		case unicode.IsSpace(r):
			endWord()
		default:
			word.WriteRune(r)
			inWord = true
		}
	}
	if quote != 0 {
		return nil, errors.New("unterminated quote")
	}
	if err := endCommand(); err != nil {
		return nil, err
	}
	return cmds, nil
}

// TestParseShell pins the shell subset the README is read with.
func TestParseShell(t *testing.T) {
	env := func(n string) (string, bool) {
		if n == "SET" {
			return "v", true
		}
		return "", false
	}
	got, err := parseShell("cd a && x 'q w' \"d $SET ${UNSET:-def} ${SET:-no}\" \\\n  --f=1 >/dev/null # c\ncd .. ; y 2>&1\n", env)
	if err != nil {
		t.Fatal(err)
	}
	want := []shellCommand{{args: []string{"x", "q w", "d v def v", "--f=1"}, dir: "a"}, {args: []string{"y"}, dir: "."}}
	if fmt.Sprint(got) != fmt.Sprint(want) || got[0].dir != "a" || got[1].dir != "." {
		t.Errorf("got %+v, want %+v", got, want)
	}
	for _, bad := range []string{"a | b", "a || b", "echo $(id)", "echo `id`", "cd ../..", "echo 'x"} {
		if _, err := parseShell(bad, env); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}
