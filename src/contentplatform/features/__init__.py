"""Feature flags evaluated per tenant: global default, rollout, tenant override, opt-in for
betas (flags.py declares them and says how one is decided)."""
