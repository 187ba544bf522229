package keys

import "context"

// GetOrganization implements Reader, from the cache.
func (c *Cached) GetOrganization(ctx context.Context, id string) (Organization, error) {
	o, p, err := c.orgs.get(c, id, func() (Organization, error) { return c.store.GetOrganization(ctx, id) })
	c.show(p, &o.Budget)
	return o, err
}
