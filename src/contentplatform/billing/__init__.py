"""Billing: plans and credit packs mirrored from Stripe, the subscription, invoices, plan limits,
and the payment provider's events."""
