"""Impersonation: a superadmin's time-boxed, audited session inside a tenant
(admin.startImpersonation, admin.endImpersonation)."""
