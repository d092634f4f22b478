"""Events: every change a user would want to hear about, written as a row of the outbox in the
same transaction as the change, then fanned out to whoever listens (notifications, outbound
webhooks). The outbox is also the tenant's activity trail (`activity.list`)."""
