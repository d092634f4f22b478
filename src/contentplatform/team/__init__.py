"""Team: members and invitations kept in step with the identity provider, and its events."""
