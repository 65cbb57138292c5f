package engine

import "context"

// TenantKey is the metadata key that names the tenant a request belongs to.
const TenantKey = "tenant"

// TenantOf returns the tenant metadata names: its TenantKey value when that is a
// string, else "".
func TenantOf(metadata map[string]any) string {
	t, _ := metadata[TenantKey].(string)
	return t
}

type tenantKey struct{}

// WithTenant returns ctx confined to tenant: the driver calls made with it may only
// open requests whose metadata names tenant and only touch requests opened under it
// (see CheckTenant). Entry points confine the calls of a caller bound to a tenant.
func WithTenant(ctx context.Context, tenant string) context.Context {
	return context.WithValue(ctx, tenantKey{}, tenant)
}

// TenantFrom returns the tenant ctx is confined to, if any.
func TenantFrom(ctx context.Context) (string, bool) {
	t, ok := ctx.Value(tenantKey{}).(string)
	return t, ok
}

// CheckTenant returns the refusal (RefusedTenantForbidden) of a call with ctx on
// request id of tenant (a request's TenantOf its metadata, a record's Tenant) when ctx
// is confined to another tenant, and nil otherwise. A request of no tenant is another
// tenant's. The refusal names neither tenant.
func CheckTenant(ctx context.Context, id, tenant string) error {
	if want, ok := TenantFrom(ctx); ok && tenant != want {
		return &RefusalError{Code: RefusedTenantForbidden, RequestID: id}
	}
	return nil
}
