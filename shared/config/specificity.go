package config

import "strings"

// Specificity ranks a wildcard pattern as LiteLLM's pattern router ranks
// it: the pattern becomes a regular expression (Python's re.escape, each
// '*' then "(.*)"), and a longer expression, then one with more regex
// operators, is more specific. Where patterns overlap ("*" and
// "openai/*"), the most specific one serves, whatever the order of the
// config file.
func Specificity(pattern string) (length, operators int) {
	for i := 0; i < len(pattern); i++ {
		switch c := pattern[i]; {
		case c == '*':
			length += len("(.*)")
			operators += 3 // '(', '*', ')'
		case strings.IndexByte(`()[]{}?+-|^$\.&~# `+"\t\n\r\v\f", c) >= 0:
			length += 2 // escaped: a backslash and the byte
			operators++ // the backslash
			if strings.IndexByte(`()?+|^$\`, c) >= 0 {
				operators++ // the byte itself counts too
			}
		default:
			length++
		}
	}
	return length, operators
}

// MoreSpecific reports whether wildcard pattern a ranks above b.
func MoreSpecific(a, b string) bool {
	la, oa := Specificity(a)
	lb, ob := Specificity(b)
	return la > lb || (la == lb && oa > ob)
}
