// Package adminapi is the admin API: LiteLLM's management routes for keys,
// teams, users, end users (customers), spend reports and model info, with
// LiteLLM's paths, request bodies, response shapes and role permissions.
//
// It writes through keys.Admin to the store the gateway reads (keys.Cached drops
// its own entries on write; other instances see a change within their key
// cache TTL). It knows nothing of Lambda: functions/admin serves it through a
// buffered function URL, and local mode serves it on the gateway's port.
//
// Without a master key every management route answers 401: the admin API
// never runs open.
package adminapi

import (
	"context"
	"crypto/subtle"
	"log/slog"
	"net/http"
	"strings"
	"time"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/keyauth"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/models"
	"github.com/sluice-gw/sluice/shared/spend"
)

// SpendReader is what the spend report routes read: the spend store's
// query methods (spend.Store implements it).
type SpendReader interface {
	LogPage(ctx context.Context, q spend.LogQuery) (spend.LogPage, error)
	Daily(ctx context.Context, q spend.DailyQuery) ([]spend.DailyRow, error)
	Totals(ctx context.Context, q spend.TotalsQuery) ([]spend.Total, error)
}

// Options configure the admin API.
type Options struct {
	// MasterKey is the proxy admin's key. Empty: every management route
	// answers 401 saying how to set one.
	MasterKey string
	// Keys is the store of keys, teams, users and end users; nil answers 503.
	Keys keys.Admin
	// Spend answers the spend reports; nil: those routes answer 501.
	Spend SpendReader
	// Config gives /model/info its deployments; nil: none.
	Config *config.Config
	// Cooldowns is the shared cooldown store /model/info reads each
	// deployment's cooldown from (cooldowns.go); nil: cooling_down is null.
	Cooldowns CooldownReader
	// Models is the model store (general_settings.store_model_in_db): the
	// /model/* write routes, and /model/info lists its deployments
	// (models.Catalog.View) instead of Config's; nil: those routes answer
	// 400 saying how to turn it on.
	Models *models.Catalog
	// Sealer seals the credentials of keys' and teams' logging callbacks
	// (callback_vars) before they are stored (sealvars.go); nil: stored
	// as given.
	Sealer keys.VarSealer
	Now    func() time.Time
	Logger *slog.Logger
}

// Handler serves the admin API.
type Handler struct {
	masterKey []byte
	keys      keys.Admin
	spend     SpendReader
	cfg       *config.Config
	cooldowns CooldownReader
	models    *models.Catalog
	now       func() time.Time
	log       *slog.Logger
}

// New returns the admin API handler.
func New(o Options) *Handler {
	h := &Handler{masterKey: []byte(o.MasterKey), keys: o.Keys, spend: o.Spend, cfg: o.Config, cooldowns: o.Cooldowns, models: o.Models, now: o.Now, log: o.Logger}
	if h.now == nil {
		h.now = time.Now
	}
	if h.keys != nil {
		h.keys = metaKeys{Admin: h.keys, s: o.Sealer}
	}
	if h.log == nil {
		h.log = slog.Default()
	}
	return h
}

// route is one management route.
type route struct {
	method string
	serve  func(h *Handler, w http.ResponseWriter, r *http.Request, c *caller) error
}

// alsoMethods are second methods of routes: LiteLLM's deprecated POST
// /organization/info (a list by body) beside its GET.
var alsoMethods = map[string]string{"/organization/info": http.MethodPost}

// routes are LiteLLM's management routes. /key/{key}/regenerate is matched
// apart (Routes lists it).
var routes = map[string]route{
	"/key/generate":   {http.MethodPost, (*Handler).keyGenerate},
	"/key/update":     {http.MethodPost, (*Handler).keyUpdate},
	"/key/delete":     {http.MethodPost, (*Handler).keyDelete},
	"/key/block":      {http.MethodPost, (*Handler).keyBlock},
	"/key/unblock":    {http.MethodPost, (*Handler).keyUnblock},
	"/key/regenerate": {http.MethodPost, (*Handler).keyRegenerate},
	"/key/info":       {http.MethodGet, (*Handler).keyInfo},
	"/key/list":       {http.MethodGet, (*Handler).keyList},

	"/team/new":           {http.MethodPost, (*Handler).teamNew},
	"/team/update":        {http.MethodPost, (*Handler).teamUpdate},
	"/team/delete":        {http.MethodPost, (*Handler).teamDelete},
	"/team/member_add":    {http.MethodPost, (*Handler).teamMemberAdd},
	"/team/member_update": {http.MethodPost, (*Handler).teamMemberUpdate},
	"/team/member_delete": {http.MethodPost, (*Handler).teamMemberDelete},
	"/team/block":         {http.MethodPost, (*Handler).teamBlock},
	"/team/unblock":       {http.MethodPost, (*Handler).teamUnblock},
	"/team/info":          {http.MethodGet, (*Handler).teamInfo},
	"/team/list":          {http.MethodGet, (*Handler).teamList},
	"/active/callbacks":   {http.MethodGet, (*Handler).activeCallbacks}, // callbacks.go

	"/user/new":    {http.MethodPost, (*Handler).userNew},
	"/user/update": {http.MethodPost, (*Handler).userUpdate},
	"/user/delete": {http.MethodPost, (*Handler).userDelete},
	"/user/info":   {http.MethodGet, (*Handler).userInfo},
	"/user/list":   {http.MethodGet, (*Handler).userList},

	"/customer/new":     {http.MethodPost, (*Handler).customerNew},
	"/customer/update":  {http.MethodPost, (*Handler).customerUpdate},
	"/customer/delete":  {http.MethodPost, (*Handler).customerDelete},
	"/customer/block":   {http.MethodPost, (*Handler).customerBlock},
	"/customer/unblock": {http.MethodPost, (*Handler).customerUnblock},
	"/customer/info":    {http.MethodGet, (*Handler).customerInfo},
	"/customer/list":    {http.MethodGet, (*Handler).customerList},

	"/spend/logs":          {http.MethodGet, (*Handler).spendLogs},
	"/global/spend/report": {http.MethodGet, (*Handler).globalSpendReport},
	"/user/daily/activity": {http.MethodGet, (*Handler).userDailyActivity},
	"/team/daily/activity": {http.MethodGet, (*Handler).teamDailyActivity},

	"/organization/daily/activity": {http.MethodGet, (*Handler).orgDailyActivity}, // orgspend.go

	"/organization/new":           {http.MethodPost, (*Handler).orgNew},
	"/organization/update":        {http.MethodPatch, (*Handler).orgUpdate},
	"/organization/delete":        {http.MethodDelete, (*Handler).orgDelete},
	"/organization/info":          {http.MethodGet, (*Handler).orgInfo},
	"/organization/list":          {http.MethodGet, (*Handler).orgList},
	"/organization/member_add":    {http.MethodPost, (*Handler).orgMemberAdd},
	"/organization/member_update": {http.MethodPatch, (*Handler).orgMemberUpdate},
	"/organization/member_delete": {http.MethodDelete, (*Handler).orgMemberDelete},

	"/model/info":    {http.MethodGet, (*Handler).modelInfo},
	"/v1/model/info": {http.MethodGet, (*Handler).modelInfo},
	"/v2/model/info": {http.MethodGet, (*Handler).modelInfoV2},
	"/model/new":     {http.MethodPost, (*Handler).modelNew},
	"/model/update":  {http.MethodPost, (*Handler).modelUpdate},
	"/model/delete":  {http.MethodPost, (*Handler).modelDelete},

	"/budget/new":      {http.MethodPost, (*Handler).budgetNew},
	"/budget/update":   {http.MethodPost, (*Handler).budgetUpdate},
	"/budget/info":     {http.MethodPost, (*Handler).budgetInfo},
	"/budget/list":     {http.MethodGet, (*Handler).budgetList},
	"/budget/delete":   {http.MethodPost, (*Handler).budgetDelete},
	"/budget/settings": {http.MethodGet, (*Handler).budgetSettings},
}

// LiteLLM's other names of the customer routes: /end_user/{name} is
// /customer/{name}.
func init() {
	var names []string
	for path := range routes {
		if name, ok := strings.CutPrefix(path, "/customer/"); ok {
			names = append(names, name)
		}
	}
	for _, name := range names {
		routes["/end_user/"+name] = routes["/customer/"+name]
	}
}

// Routes returns every management route as "METHOD /path" (the
// authorization matrix test walks them). /key/{key}/regenerate is
// "POST /key/{key}/regenerate", /model/{id}/update "PATCH /model/{id}/update".
func Routes() []string {
	out := make([]string, 0, len(routes)+1)
	for p, rt := range routes {
		out = append(out, rt.method+" "+p)
		if also := alsoMethods[p]; also != "" {
			out = append(out, also+" "+p)
		}
	}
	return append(out, http.MethodPost+" /key/{key}/regenerate", http.MethodPatch+" /model/{id}/update",
		http.MethodPost+" /team/{team_id}/callback", http.MethodGet+" /team/{team_id}/callback")
}

// Handles reports whether path is an admin route (local mode sends those
// here and everything else to the gateway).
func Handles(path string) bool {
	if _, ok := routes[path]; ok {
		return true
	}
	_, ok := regeneratePath(path)
	_, isModel := modelUpdatePath(path)
	_, isTeamCallback := teamCallbackPath(path)
	return ok || isModel || isTeamCallback || path == "/health"
}

// pathID returns the {id} of a path prefix{id}suffix: a non-empty id of
// no "/".
func pathID(path, prefix, suffix string) (string, bool) {
	rest, ok := strings.CutPrefix(path, prefix)
	if !ok {
		return "", false
	}
	id, ok := strings.CutSuffix(rest, suffix)
	return id, ok && id != "" && !strings.Contains(id, "/")
}

// regeneratePath returns the key of /key/{key}/regenerate.
func regeneratePath(path string) (string, bool) { return pathID(path, "/key/", "/regenerate") }

func (h *Handler) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch r.URL.Path {
	case "/health", "/health/liveliness", "/health/readiness":
		if r.Method != http.MethodGet && r.Method != http.MethodHead {
			apierr.Write(w, apierr.New(apierr.MethodNotAllowed, "%s %s: use GET", r.Method, r.URL.Path))
			return
		}
		w.Header().Set("Content-Type", "application/json")
		_, _ = w.Write([]byte(`{"status":"healthy"}`))
		return
	}
	rt, ok := routes[r.URL.Path]
	if !ok {
		if key, isRegen := regeneratePath(r.URL.Path); isRegen {
			rt = route{http.MethodPost, func(h *Handler, w http.ResponseWriter, r *http.Request, c *caller) error {
				return h.regenerate(w, r, c, key)
			}}
		} else if id, isTeam := teamCallbackPath(r.URL.Path); isTeam { // callbacks.go
			rt = teamCallbackRoute(r.Method, id)
		} else if id, isModel := modelUpdatePath(r.URL.Path); isModel {
			rt = route{http.MethodPatch, func(h *Handler, w http.ResponseWriter, r *http.Request, c *caller) error {
				return h.updateModel(w, r, c, id)
			}}
		} else {
			apierr.Write(w, apierr.New(apierr.NotFound, "no admin route %s %s", r.Method, r.URL.Path))
			return
		}
	}
	c, err := h.authenticate(r)
	if err != nil {
		apierr.Write(w, err)
		return
	}
	also := alsoMethods[r.URL.Path]
	if r.Method != rt.method && (also == "" || r.Method != also) && !(rt.method == http.MethodGet && r.Method == http.MethodHead) {
		w.Header().Set("Allow", strings.TrimSuffix(rt.method+", "+also, ", "))
		apierr.Write(w, apierr.New(apierr.MethodNotAllowed, "%s %s: use %s", r.Method, r.URL.Path, rt.method))
		return
	}
	if h.keys == nil {
		apierr.Write(w, apierr.New(apierr.Unavailable, "the admin API has no keys store configured"))
		return
	}
	rec := &statusWriter{ResponseWriter: w}
	if err := rt.serve(h, rec, r, c); err != nil {
		e := apierr.Store(err)
		if e.Kind == apierr.Internal || e.Kind == apierr.Unavailable {
			h.log.LogAttrs(r.Context(), slog.LevelError, "admin request failed", slog.String("path", r.URL.Path),
				slog.String("caller", c.name()), slog.String("error", e.Error()))
		}
		apierr.Write(rec, e)
	}
	h.log.LogAttrs(r.Context(), slog.LevelInfo, "admin", slog.String("method", r.Method), slog.String("path", routeName(r.URL.Path)),
		slog.String("caller", c.name()), slog.Int("status", rec.status()))
}

// routeName is the path as logged: a regenerate path names no key.
func routeName(path string) string {
	if _, ok := regeneratePath(path); ok {
		return "/key/{key}/regenerate"
	}
	if _, ok := modelUpdatePath(path); ok {
		return "/model/{id}/update"
	}
	if _, ok := teamCallbackPath(path); ok {
		return "/team/{team_id}/callback"
	}
	return path
}

type statusWriter struct {
	http.ResponseWriter
	code int
}

func (s *statusWriter) WriteHeader(code int) {
	if s.code == 0 {
		s.code = code
	}
	s.ResponseWriter.WriteHeader(code)
}

func (s *statusWriter) Write(b []byte) (int, error) {
	if s.code == 0 {
		s.code = http.StatusOK
	}
	return s.ResponseWriter.Write(b)
}

func (s *statusWriter) status() int {
	if s.code == 0 {
		return http.StatusOK
	}
	return s.code
}

// caller is who makes an admin request.
type caller struct {
	master bool
	role   keys.UserRole // "" for a key that belongs to no user
	userID string
	key    *keys.Key // the key used; nil for the master key
	user   *keys.User
	// scope is the key's bound scope when it was minted for its user by
	// someone else (bound.go); nil: the caller's rights are its user's.
	scope *keys.Bound
}

func (c *caller) admin() bool  { return c.role == keys.RoleProxyAdmin }
func (c *caller) viewer() bool { return c.admin() || c.role == keys.RoleProxyAdminViewer }

// internal reports whether c is an internal user (may write its own keys).
func (c *caller) internal() bool { return c.role == keys.RoleInternalUser }

// name is who c is in logs and in created_by / deleted_by.
func (c *caller) name() string {
	switch {
	case c.master:
		return "master_key"
	case c.userID != "":
		return c.userID
	case c.key != nil:
		return "key:" + c.key.Hash[:12]
	}
	return ""
}

// credential reads the caller's key as LiteLLM does: x-litellm-api-key,
// then Authorization: Bearer, then api-key, then x-api-key.
func credential(r *http.Request) string {
	if v := strings.TrimSpace(r.Header.Get("X-Litellm-Api-Key")); v != "" {
		return strings.TrimSpace(strings.TrimPrefix(v, "Bearer "))
	}
	if a := r.Header.Get("Authorization"); a != "" {
		if len(a) > 7 && strings.EqualFold(a[:7], "bearer ") {
			return strings.TrimSpace(a[7:])
		}
		return strings.TrimSpace(a)
	}
	if v := r.Header.Get("Api-Key"); v != "" {
		return strings.TrimSpace(v)
	}
	return strings.TrimSpace(r.Header.Get("X-Api-Key"))
}

func (h *Handler) authenticate(r *http.Request) (*caller, error) {
	if len(h.masterKey) == 0 {
		return nil, apierr.New(apierr.Unauthorized,
			"the admin API needs a master key and none is configured: set GATEWAY_MASTER_KEY (or general_settings.master_key; in AWS the SSM parameter GATEWAY_MASTER_KEY_PARAMETER names)")
	}
	token := credential(r)
	if token == "" {
		return nil, apierr.New(apierr.Unauthorized, "%s", apierr.Detail(apierr.MsgNoKey, "Send it as 'Authorization: Bearer <key>' or 'x-litellm-api-key: <key>'."))
	}
	if subtle.ConstantTimeCompare([]byte(token), h.masterKey) == 1 {
		return &caller{master: true, role: keys.RoleProxyAdmin}, nil
	}
	if h.keys == nil {
		return nil, apierr.New(apierr.Unauthorized, "%s", apierr.Detail(apierr.MsgInvalidKey, "(invalid API key)"))
	}
	auth := keyauth.Authenticator{Keys: h.keys, Now: h.now}
	k, err := auth.Key(r.Context(), token)
	if err != nil {
		return nil, err
	}
	c := &caller{key: &k}
	u, err := auth.User(r.Context(), k)
	if err != nil {
		return nil, err
	}
	if u != nil {
		c.user, c.userID, c.role = u, u.ID, u.Role
	}
	if !k.Bound.IsZero() {
		c.scope, c.role = &k.Bound, boundRole(c.role)
	}
	return c, nil
}

// forbidden is a 403 for a route or record the caller may not touch.
func forbidden(format string, args ...any) *apierr.Error {
	e := apierr.New(apierr.Forbidden, format, args...)
	e.Code = "insufficient_permissions"
	return e
}

// needAdmin refuses everyone but a proxy admin; viewers get a 403 that says
// they only read.
func needAdmin(c *caller) error {
	if c.admin() {
		return nil
	}
	if c.viewer() {
		return forbidden("proxy_admin_viewer may read but not write")
	}
	return forbidden("this route needs a proxy_admin")
}

// teamRole returns c's role in team ("" if none): an org_admin of the
// team's organization is an admin of it.
func (h *Handler) teamRole(ctx context.Context, c *caller, team string) (string, error) {
	if c.userID == "" || team == "" {
		return "", nil
	}
	t, ok, err := found(h.keys.GetTeam(ctx, team))
	if !ok {
		return "", err
	}
	if !c.holdsTeam(t) {
		return "", outOfScope(c, "team "+team)
	}
	if role := t.Role(c.userID); role == keys.MemberAdmin {
		return role, nil
	}
	if admin, err := h.orgAdmin(ctx, c, t.OrganizationID); err != nil || admin {
		return keys.MemberAdmin, err
	}
	return t.Role(c.userID), nil
}

// Mux serves the admin routes with admin and everything else with gateway:
// local mode's single port, as LiteLLM's proxy serves both.
func Mux(admin *Handler, gateway http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path != "/health" && Handles(r.URL.Path) {
			admin.ServeHTTP(w, r)
			return
		}
		gateway.ServeHTTP(w, r)
	})
}
