package config

import "strings"

// DisplayURL is a URL as the gateway shows it (response headers, spend
// logs, the admin API): with any userinfo ("https://user:password@host")
// replaced by "[redacted]". An api_base may carry credentials; only the
// upstream request uses them. Without an '@' it is s itself, at the cost
// of one byte search.
func DisplayURL(s string) string {
	if strings.IndexByte(s, '@') < 0 {
		return s
	}
	start := strings.Index(s, "://")
	if start < 0 {
		return s
	}
	start += 3
	end := len(s)
	if i := strings.IndexAny(s[start:], "/?#"); i >= 0 {
		end = start + i
	}
	at := strings.LastIndexByte(s[start:end], '@')
	if at < 0 {
		return s // an '@' in the path or query, not userinfo
	}
	return s[:start] + "[redacted]@" + s[start+at+1:]
}
