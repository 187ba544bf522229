package adminapi

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"maps"
	"net/http"
	"strings"

	"github.com/sluice-gw/sluice/shared/apierr"
	"github.com/sluice-gw/sluice/shared/config"
	"github.com/sluice-gw/sluice/shared/keys"
	"github.com/sluice-gw/sluice/shared/models"
)

// The model routes of store_model_in_db (LiteLLM's
// model_management_endpoints.py): POST /model/new, POST /model/update,
// PATCH /model/{id}/update and POST /model/delete write the model store,
// proxy admins only. A stored deployment is checked by the config's own
// loader before it is written (the same errors and warnings as in the
// file); its credentials are sealed with the salt key and never shown.

// modelUpdatePath returns the id of a PATCH /model/{id}/update path.
func modelUpdatePath(path string) (string, bool) { return pathID(path, "/model/", "/update") }

// catalog is the model store, or the 400 saying how to turn it on.
func (h *Handler) catalog(c *caller) (*models.Catalog, error) {
	if err := needAdmin(c); err != nil {
		return nil, err
	}
	if h.models == nil {
		return nil, apierr.New(apierr.InvalidRequest, "store_model_in_db is off: set general_settings.store_model_in_db: true to add, change and delete models through the API")
	}
	return h.models, nil
}

// modelBody is a /model/* body: LiteLLM's Deployment (model_name,
// litellm_params, model_info), each part optional here.
type modelBody struct {
	name   string
	params map[string]any
	info   map[string]any
	id     string // model_info.id
}

func readModelBody(r *http.Request) (modelBody, error) {
	p, err := readParams(r)
	if err != nil {
		return modelBody{}, err
	}
	var b modelBody
	b.name, _ = p.str("model_name")
	b.params, _ = decoded[map[string]any](p, "litellm_params", "want an object")
	b.info, _ = decoded[map[string]any](p, "model_info", "want an object")
	if err := p.done(); err != nil {
		return b, err
	}
	if v, ok := b.info["id"]; ok && v != nil {
		s, isStr := v.(string)
		if !isStr {
			return b, badParam("model_info.id", "want a string")
		}
		b.id = s
	}
	delete(b.info, "id")
	return b, nil
}

// storedError is the client's error for a deployment the config's loader
// refused: a 400 naming its path.
func storedError(err error) error {
	var ce *config.Error
	if errors.As(err, &ce) {
		return badParam(ce.Path, "%s", ce.Msg)
	}
	if errors.Is(err, models.ErrSealer) {
		return apierr.New(apierr.InvalidRequest, "%v", err)
	}
	return err
}

// modelWrite is the model store and the body of a write (proxy admins).
func (h *Handler) modelWrite(r *http.Request, c *caller) (*models.Catalog, modelBody, error) {
	cat, err := h.catalog(c)
	if err != nil {
		return nil, modelBody{}, err
	}
	b, err := readModelBody(r)
	return cat, b, err
}

func (h *Handler) modelNew(w http.ResponseWriter, r *http.Request, c *caller) error {
	cat, b, err := h.modelWrite(r, c)
	if err != nil {
		return err
	}
	switch {
	case strings.TrimSpace(b.name) == "":
		return badParam("model_name", "is required")
	case b.params == nil:
		return badParam("litellm_params", "is required (with model: provider/model)")
	}
	if b.id == "" {
		b.id = newID() // LiteLLM's model_info.id default: a uuid
	}
	if err := keys.ValidID("model_info.id", b.id); err != nil {
		return err
	}
	warns, err := cat.Check(config.Stored{ID: b.id, ModelName: b.name, Params: b.params, Info: b.info})
	if err != nil {
		return storedError(err)
	}
	sealed, err := cat.Seal(b.params)
	if err != nil {
		return storedError(err)
	}
	now := h.now()
	rec := models.Record{ID: b.id, ModelName: b.name, Params: sealed, Info: b.info, CreatedAt: now, UpdatedAt: now, CreatedBy: c.name(), UpdatedBy: c.name(), Rev: 1}
	if err := cat.Store.Create(r.Context(), rec); err != nil {
		if errors.Is(err, models.ErrExists) {
			return badParam("model_info.id", "Model with id=%s already exists", b.id)
		}
		return err
	}
	h.reloadModels(r.Context(), cat)
	return ok(w, modelRow(rec, warns))
}

func (h *Handler) modelUpdate(w http.ResponseWriter, r *http.Request, c *caller) error {
	return h.updateModel(w, r, c, "")
}

// updateModel is POST /model/update (id in model_info; null keeps a
// value, as LiteLLM's) and PATCH /model/{id}/update (id from the path;
// null removes a value).
func (h *Handler) updateModel(w http.ResponseWriter, r *http.Request, c *caller, pathID string) error {
	cat, b, err := h.modelWrite(r, c)
	if err != nil {
		return err
	}
	id, nullClears := b.id, pathID != ""
	switch {
	case pathID != "" && b.id != "" && b.id != pathID:
		return badParam("model_info.id", "%q differs from the path's id %q; the id of a deployment cannot change", b.id, pathID)
	case pathID != "":
		id = pathID
	case id == "":
		return badParam("model_info.id", "is required: the id of the stored deployment to update")
	}
	ctx := r.Context()
	if configDeployment(cat.View(ctx), id) {
		return badParam("model_info.id", "model %q is in the config file, and the config's deployment wins over a stored one with its id: it can't be edited here. Edit the config, or add a deployment with another id through /model/new", id)
	}
	rec, err := cat.Store.Get(ctx, id)
	if errors.Is(err, models.ErrNotFound) {
		return apierr.New(apierr.NotFound, "model %q not found in the model store", id)
	}
	if err != nil {
		return err
	}
	plain, err := cat.OpenParams(rec.Params)
	if err != nil {
		return storedError(err)
	}
	params, info := merged(plain, b.params, nullClears), merged(rec.Info, b.info, nullClears)
	if strings.TrimSpace(b.name) != "" {
		rec.ModelName = b.name
	}
	warns, err := cat.Check(config.Stored{ID: id, ModelName: rec.ModelName, Params: params, Info: info})
	if err != nil {
		return storedError(err)
	}
	if rec.Params, err = cat.Seal(params); err != nil {
		return storedError(err)
	}
	rec.Info, rec.UpdatedAt, rec.UpdatedBy = info, h.now(), c.name()
	if err := cat.Store.Update(ctx, rec); err != nil {
		return err
	}
	rec.Rev++
	h.reloadModels(ctx, cat)
	return ok(w, modelRow(rec, warns))
}

// merged is old with the values of patch: a null keeps the old value, or
// removes it when nullClears.
func merged(old, patch map[string]any, nullClears bool) map[string]any {
	out := maps.Clone(old)
	if out == nil {
		out = map[string]any{}
	}
	for k, v := range patch {
		switch {
		case v != nil:
			out[k] = v
		case nullClears:
			delete(out, k)
		}
	}
	return out
}

// configDeployment reports whether id is a config file's deployment.
func configDeployment(cfg *config.Config, id string) bool {
	if cfg == nil {
		return false
	}
	for _, d := range cfg.Deployments {
		if d.ID == id && !d.Stored {
			return true
		}
	}
	return false
}

func (h *Handler) modelDelete(w http.ResponseWriter, r *http.Request, c *caller) error {
	cat, err := h.catalog(c)
	if err != nil {
		return err
	}
	id, err := requiredParam(r, "id", "is required: the id of the stored deployment to delete")
	if err != nil {
		return err
	}
	ctx := r.Context()
	rec, err := cat.Store.Get(ctx, id)
	if errors.Is(err, models.ErrNotFound) {
		if configDeployment(cat.View(ctx), id) {
			return badParam("id", "Model with id=%s not found in db: it is in the config file; remove it there", id)
		}
		return badParam("id", "Model with id=%s not found in db", id)
	}
	if err != nil {
		return err
	}
	if err := cat.Store.Delete(ctx, id, rec.Rev); err != nil {
		return err
	}
	h.reloadModels(ctx, cat)
	return ok(w, obj{"message": fmt.Sprintf("Model: %s deleted successfully", id)})
}

// reloadModels makes this instance serve the write at once; the others
// within their reload interval. The write is done: a failed reload is
// logged, not the request's error.
func (h *Handler) reloadModels(ctx context.Context, cat *models.Catalog) {
	if cat.Reload == nil {
		return
	}
	if err := cat.Reload(ctx); err != nil {
		h.log.LogAttrs(ctx, slog.LevelWarn, "stored models: reload after a write failed", slog.String("error", err.Error()))
	}
}

// modelRow is a stored deployment as LiteLLM's /model/new and
// /model/update answer it (the row of LiteLLM_ProxyModelTable), without
// any credential, with the loader's warnings about it.
func modelRow(rec models.Record, warns []config.Warning) obj {
	params := obj{}
	for k, v := range rec.Params {
		if !models.Secret(k) {
			params[k] = v
		}
	}
	info := obj{}
	maps.Copy(info, rec.Info)
	info["id"], info["db_model"] = rec.ID, true
	o := obj{"model_id": rec.ID, "model_name": rec.ModelName, "litellm_params": params, "model_info": info,
		"created_at": ts(rec.CreatedAt), "created_by": rec.CreatedBy, "updated_at": ts(rec.UpdatedAt), "updated_by": rec.UpdatedBy}
	if len(warns) > 0 {
		ws := make([]string, len(warns))
		for i, w := range warns {
			ws[i] = w.String()
		}
		o["warnings"] = ws
	}
	return o
}
