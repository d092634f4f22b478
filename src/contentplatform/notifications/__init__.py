"""Notifications and watches: in-app notifications per user, made from the events outbox by a
listener, and the watches (per resource, and the tenant watch of role defaults) that choose
them. routing.py says who hears of what; texts.py what they read."""
