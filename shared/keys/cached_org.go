package keys

import "context"

// GetOrganization implements Reader, from the cache.
func (c *Cached) GetOrganization(ctx context.Context, id string) (Organization, error) {
	return c.orgs.get(c, id, func() (Organization, error) { return c.store.GetOrganization(ctx, id) })
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

// dropOrgMember forgets the organization and user an organization
// membership change touches.
func (c *Cached) dropOrgMember(org, user string) {
	c.orgs.drop(org)
	c.users.drop(user)
}

// AddOrgMember implements Admin.
func (c *Cached) AddOrgMember(ctx context.Context, m OrgMembership) error {
	defer c.dropOrgMember(m.OrgID, m.UserID)
	return c.store.AddOrgMember(ctx, m)
}

// UpdateOrgMember implements Admin.
func (c *Cached) UpdateOrgMember(ctx context.Context, m OrgMembership) (OrgMembership, error) {
	defer c.dropOrgMember(m.OrgID, m.UserID)
	return c.store.UpdateOrgMember(ctx, m)
}

// RemoveOrgMember implements Admin.
func (c *Cached) RemoveOrgMember(ctx context.Context, org, user string) error {
	defer c.dropOrgMember(org, user)
	return c.store.RemoveOrgMember(ctx, org, user)
}
