package keys

import "context"

// GetOrganization implements Reader, from the cache.
func (c *Cached) GetOrganization(ctx context.Context, id string) (Organization, error) {
	o, p, err := c.orgs.get(c, id, func() (Organization, error) { return c.store.GetOrganization(ctx, id) })
	c.show(p, &o.Budget)
	return o, err
}

// CreateOrganization implements Admin.
func (c *Cached) CreateOrganization(ctx context.Context, o Organization) error {
	defer c.drop(o.ref())
	return c.store.CreateOrganization(ctx, o)
}

// UpdateOrganization implements Admin.
func (c *Cached) UpdateOrganization(ctx context.Context, o Organization) (Organization, error) {
	return after(c, func() (Organization, error) { return c.store.UpdateOrganization(ctx, o) }, o.ref())
}
