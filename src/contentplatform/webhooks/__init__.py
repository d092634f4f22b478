"""Outbound webhooks: a tenant's endpoints subscribed to event types, and the signed deliveries
of its events to them (Standard Webhooks), retried with backoff and logged for 30 days."""
