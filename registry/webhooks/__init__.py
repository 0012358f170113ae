"""Outgoing webhooks: which addresses a receiver may have, and how one delivery is signed and sent.

The rows (hooks and deliveries) and when to send live in registry/services/webhooks.py; this
package only speaks HTTP, so it can be read (and tested) without the database."""
