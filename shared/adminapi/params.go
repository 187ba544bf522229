package adminapi

import (
	"bytes"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/keys"
)

// maxBody bounds an admin request body.
const maxBody = 1 << 20

// badParam is a 400 naming the parameter.
func badParam(param, format string, args ...any) *apierr.Error {
	return apierr.NewParam(apierr.InvalidRequest, param, "%s: %s", param, fmt.Sprintf(format, args...))
}

// params is a JSON object body read field by field. Every field must be
// read (or declared ignored) by the route: an unknown field is a 400, so
// that a misspelt limit is never silently dropped.
type params struct {
	m    map[string]json.RawMessage
	used map[string]bool
	err  error // the first error
}

func readParams(r *http.Request) (*params, error) {
	b, err := io.ReadAll(io.LimitReader(r.Body, maxBody+1))
	if err != nil {
		return nil, apierr.BodyRead(err) // 408 when local mode's body timeout hit
	}
	if len(b) > maxBody {
		return nil, apierr.New(apierr.TooLarge, "request body over %d bytes", maxBody)
	}
	p := &params{m: map[string]json.RawMessage{}, used: map[string]bool{}}
	if len(bytes.TrimSpace(b)) == 0 {
		return p, nil
	}
	if err := json.Unmarshal(b, &p.m); err != nil || p.m == nil {
		return nil, apierr.New(apierr.InvalidRequest, "the request body is not a JSON object: %v", jsonErr(err))
	}
	return p, nil
}

// readParam reads a body whose one field is the string name (absent: "").
func readParam(r *http.Request, name string) (string, error) {
	p, err := readParams(r)
	if err != nil {
		return "", err
	}
	v, _ := p.str(name)
	return v, p.done()
}

// requiredParam is readParam of a field the body must give: empty, it is
// refused naming name, with why.
func requiredParam(r *http.Request, name, why string) (string, error) {
	v, err := readParam(r, name)
	if err == nil && v == "" {
		err = badParam(name, "%s", why)
	}
	return v, err
}

func jsonErr(err error) string {
	if err == nil {
		return "null"
	}
	return err.Error()
}

func (p *params) fail(e *apierr.Error) {
	if p.err == nil {
		p.err = e
	}
}

// raw returns a field's JSON, and whether it is present and not null.
func (p *params) raw(name string) (json.RawMessage, bool) {
	p.used[name] = true
	v, ok := p.m[name]
	if !ok || string(bytes.TrimSpace(v)) == "null" {
		return nil, false
	}
	return v, true
}

// has reports whether the field is present (null included).
func (p *params) has(name string) bool {
	_, ok := p.m[name]
	return ok
}

// decoded reads the field name as a T: absent or null, false; not a T,
// the 400 "name: want".
func decoded[T any](p *params, name, want string) (T, bool) {
	var zero T
	raw, ok := p.raw(name)
	if !ok {
		return zero, false
	}
	var v T
	if err := json.Unmarshal(raw, &v); err != nil {
		p.fail(badParam(name, "%s", want))
		return zero, false
	}
	return v, true
}

// nullable reads the field name as a T that null clears: set is whether
// the field is present and null or a T (v is then zero or the T).
func nullable[T any](p *params, name, want string) (v T, set bool) {
	present := p.has(name)
	v, ok := decoded[T](p, name, want)
	return v, ok || present && p.err == nil
}

// idParams are the fields whose values become part of a record's
// DynamoDB key: keys.ValidID checks them as the body is read, so that a
// hostile id is a 400 naming the field before any record is read.
var idParams = map[string]bool{
	"team_id": true, "user_id": true, "key_alias": true, "end_user_id": true,
	"team_ids": true, "user_ids": true, "key_aliases": true, "teams": true,
	"organization_id": true, "organization_ids": true, "organizations": true, "budget_id": true, "budgets": true,
}

// validID checks v, the value of the id field name (or an entry of it).
func (p *params) validID(name, v string) bool {
	if !idParams[name] || v == "" {
		return true
	}
	if err := keys.ValidID(name, v); err != nil {
		p.fail(apierr.Store(err))
		return false
	}
	return true
}

func (p *params) str(name string) (string, bool) {
	s, ok := decoded[string](p, name, "want a string")
	if ok && !p.validID(name, s) {
		return "", false
	}
	return s, ok
}

func (p *params) strs(name string) ([]string, bool) {
	s, ok := decoded[[]string](p, name, "want a list of strings")
	if ok && slices.Contains(s, "") {
		p.fail(badParam(name, "empty string in the list"))
		return nil, false
	}
	for _, v := range s {
		if !p.validID(name, v) {
			return nil, false
		}
	}
	return s, ok
}

func (p *params) boolean(name string) (bool, bool) {
	return decoded[bool](p, name, "want true or false")
}

// limit reads a non-negative whole number (rpm_limit, tpm_limit).
func (p *params) limit(name string) (int64, bool) {
	f, ok := decoded[float64](p, name, "want a number")
	if !ok {
		return 0, false
	}
	if f < 0 || f != math.Trunc(f) || f > math.MaxInt64/2 {
		p.fail(badParam(name, "want a whole number >= 0, got %v", f))
		return 0, false
	}
	return int64(f), true
}

// maxParallel reads max_parallel_requests: a whole number >= 0 (0 admits
// no request, as in LiteLLM), or null (present, nil: no bound).
func (p *params) maxParallel(name string) (*int64, bool) {
	n, ok := p.limit(name)
	if !ok {
		return nil, false
	}
	return &n, true
}

// modelLimits reads model_rpm_limit or model_tpm_limit: an object of
// model name -> whole number >= 0; null or {} clears it.
func (p *params) modelLimits(name string) (map[string]int64, bool) {
	m, set := nullable[map[string]float64](p, name, "want an object of model names to whole numbers")
	if !set {
		return nil, false
	}
	out := make(map[string]int64, len(m))
	for model, f := range m {
		if model == "" || f < 0 || f != math.Trunc(f) || f > math.MaxInt64/2 {
			p.fail(badParam(name, "want model names to whole numbers >= 0, got %q: %v", model, f))
			return nil, false
		}
		out[model] = int64(f)
	}
	if len(out) == 0 {
		return nil, true
	}
	return out, true
}

// Money range. Spend is counted in whole nano-dollars, so a positive
// budget below one is a mistake (it would behave as 0 or not at all,
// depending on the check) and is refused rather than rounded; above
// maxUSD is no budget anyone means (strict budgets count at most about
// 9.2e9 USD anyway) and, far above, a number DynamoDB cannot store, so
// both stores refuse what only one of them could keep.
const (
	minUSD = 1.0 / keys.NanosPerUSD
	maxUSD = 1e15
)

// money reads a budget in USD: 0, or from one nano-dollar to maxUSD, or
// null (present, nil: no budget).
func (p *params) money(name string) (*float64, bool) {
	present := p.has(name)
	v, ok := p.raw(name)
	if !ok {
		return nil, present
	}
	f, msg := usd(v)
	if msg != "" {
		p.fail(badParam(name, "%s", msg))
		return nil, false
	}
	if f < 0 || math.IsInf(f, 0) || math.IsNaN(f) {
		p.fail(badParam(name, "want a number of USD >= 0, got %v", f))
		return nil, false
	}
	if f > maxUSD || (f > 0 && f < minUSD) {
		p.fail(badParam(name, "want 0 or a number of USD from 0.000000001 (one nano-dollar, the unit spend is counted in) to 1e15, got %v", f))
		return nil, false
	}
	return &f, true
}

// usd reads an amount of USD as LiteLLM's models take it: a JSON number,
// or a string of one ("0", as LiteLLM's docs write max_budget), which
// pydantic converts; msg says why raw is neither. The range is the
// caller's to check ("NaN" and "-1" read as such; "1e309", out of
// float64's range, is no number).
func usd(raw json.RawMessage) (f float64, msg string) {
	if err := json.Unmarshal(raw, &f); err == nil {
		return f, ""
	}
	var s string
	if json.Unmarshal(raw, &s) != nil {
		return 0, "want a number of USD"
	}
	f, err := strconv.ParseFloat(s, 64)
	if err != nil {
		return 0, "want a number of USD, got " + strconv.Quote(s)
	}
	return f, ""
}

// object reads a JSON object (metadata), compacted.
func (p *params) object(name string) (json.RawMessage, bool) {
	present := p.has(name)
	v, ok := p.raw(name)
	if !ok {
		return nil, present
	}
	var m map[string]any
	if err := json.Unmarshal(v, &m); err != nil {
		p.fail(badParam(name, "want a JSON object"))
		return nil, false
	}
	var buf bytes.Buffer
	_ = json.Compact(&buf, v)
	if buf.String() == "{}" {
		return nil, true
	}
	return buf.Bytes(), true
}

// period reads a budget_duration ("30d", "1mo", ...); null clears it.
func (p *params) period(name string) (string, bool) {
	present := p.has(name)
	s, ok := p.str(name)
	if !ok {
		return "", present
	}
	if _, err := keys.ParsePeriod(s); err != nil {
		p.fail(badParam(name, "want a number and s, m, h, d or mo, such as 30s, 1h, 1d, 7d, 30d, 1mo; got %q", s))
		return "", false
	}
	return s, true
}

// duration reads a key duration ("30s", "30m", "30h", "30d", "2w", "1mo",
// "1y"); null: no expiry.
func (p *params) duration(name string) (time.Duration, string, bool) {
	present := p.has(name)
	s, ok := p.str(name)
	if !ok {
		return 0, "", present
	}
	d, err := parseDuration(s)
	if err != nil {
		p.fail(badParam(name, "%v", err))
		return 0, "", false
	}
	return d, s, true
}

func parseDuration(s string) (time.Duration, error) {
	units := []struct {
		suffix string
		d      time.Duration
	}{{"mo", 30 * 24 * time.Hour}, {"s", time.Second}, {"m", time.Minute}, {"h", time.Hour}, {"d", 24 * time.Hour}, {"w", 7 * 24 * time.Hour}, {"y", 365 * 24 * time.Hour}}
	for _, u := range units {
		if num, ok := strings.CutSuffix(s, u.suffix); ok {
			n, err := strconv.ParseInt(num, 10, 64)
			if err != nil || n <= 0 || n > 100_000 {
				break
			}
			if n > int64(math.MaxInt64/u.d) { // would wrap around: 300y is past time.Duration's 292 years
				return 0, fmt.Errorf("want at most %d%s, got %q", int64(math.MaxInt64/u.d), u.suffix, s)
			}
			return time.Duration(n) * u.d, nil
		}
	}
	return 0, fmt.Errorf("want a number and s, m, h, d, w, mo or y, such as 30d; got %q", s)
}

// refuse refuses fields the gateway does not enforce: present with a
// value that is not empty (null, false, 0, "", [] and {} pass), they are
// a 400 naming the field and why.
func (p *params) refuse(why string, names ...string) {
	for _, name := range names {
		v, ok := p.raw(name)
		if !ok {
			continue
		}
		switch string(bytes.TrimSpace(v)) {
		case "false", "0", `""`, "[]", "{}":
			continue
		}
		p.fail(badParam(name, "not supported: %s; this gateway refuses it rather than store a setting it would not apply", why))
	}
}

// ignore marks fields that are accepted and have no effect on anything a
// user could rely on (such as send_invite_email).
func (p *params) ignore(names ...string) {
	for _, n := range names {
		p.used[n] = true
	}
}

// done returns the first error, or a 400 for a field no one read.
func (p *params) done() error {
	if p.err != nil {
		return p.err
	}
	var unknown []string
	for name := range p.m {
		if !p.used[name] {
			unknown = append(unknown, name)
		}
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		return badParam(unknown[0], "unknown field (of %s)", strings.Join(unknown, ", "))
	}
	return nil
}

// Reasons for refused fields.
const (
	whyParallel     = "max_parallel_requests is applied to keys, teams, users and deployments, not to end users"
	whyModelLimit   = "per-model budgets (model_max_budget) are applied to keys only"
	whyModelRate    = "per-model rpm and tpm limits are applied to keys and teams only"
	whyPermissions  = "permissions, routes, guardrails, cache controls and enforced params are not enforced"
	whyKeyOrg       = "a key belongs to an organization through its team: set organization_id on the team"
	whyUserOrg      = "add users to organizations with /organization/member_add"
	whyBudgetID     = "budget_id links a reusable budget (/budget/new) on end users (/customer/*), team memberships (/team/member_add, /team/member_update) and organizations; keys, teams and users carry their own max_budget and limits"
	whySpend        = "spend changes only through the spend pipeline"
	whyMemberLimit  = "team member defaults are not enforced; set max_budget_in_team per member"
	whyDefaultModel = "default models per end user are not applied"
	whyTags         = "team tags are not applied"
	whyRotation     = "automatic key rotation is not built"
	whyLimitType    = "only the default (best effort per minute) limit type exists"
)

// refusedCommon are fields refused on keys, users and teams (spend is
// refused on keys and teams only: users take it, principals.go).
func (p *params) refuseCommon() {
	p.refuse(whyPermissions, "permissions", "allowed_cache_controls", "guardrails", "enforced_params", "allowed_routes",
		"object_permission", "prompts", "allowed_passthrough_routes", "config", "blocked_tools", "allowed_vector_store_ids",
		"mcp_servers", "disable_global_guardrails", "policies", "allowed_mcp_servers", "access_group_ids")
	p.refuse(whyBudgetID, "budget_id")
	p.refuse(whyLimitType, "rpm_limit_type", "tpm_limit_type")
}

// ref reads a key given as its secret ("sk-...") or its hash.
func keyHash(v string) string {
	if keys.ValidHash(v) {
		return v
	}
	return keys.HashSecret(v)
}

// query reads URL query parameters with 400s naming the parameter.
type query struct {
	r   *http.Request
	err error
}

func (q *query) str(name string) string { return strings.TrimSpace(q.r.URL.Query().Get(name)) }

func (q *query) int(name string, def, min, max int) int {
	s := q.str(name)
	if s == "" {
		return def
	}
	n, err := strconv.Atoi(s)
	if err != nil || n < min || n > max {
		if q.err == nil {
			q.err = badParam(name, "want a whole number from %d to %d, got %q", min, max, s)
		}
		return def
	}
	return n
}

func (q *query) boolean(name string) bool {
	s := strings.ToLower(q.str(name))
	switch s {
	case "", "false", "0":
		return false
	case "true", "1":
		return true
	}
	if q.err == nil {
		q.err = badParam(name, "want true or false, got %q", s)
	}
	return false
}

// date reads a date (2006-01-02) or an RFC 3339 time.
func (q *query) date(name string) time.Time {
	s := q.str(name)
	if s == "" {
		return time.Time{}
	}
	for _, layout := range []string{time.DateOnly, time.RFC3339, "2006-01-02T15:04:05", "2006-01-02 15:04:05"} {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UTC()
		}
	}
	if q.err == nil {
		q.err = badParam(name, "want a date such as 2025-01-31, got %q", s)
	}
	return time.Time{}
}

// list reads a comma-separated list.
func (q *query) list(name string) []string {
	var out []string
	for _, v := range strings.Split(q.str(name), ",") {
		if v = strings.TrimSpace(v); v != "" {
			out = append(out, v)
		}
	}
	return out
}
