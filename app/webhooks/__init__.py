"""Webhooks: HTTP POSTs to other systems when events they subscribed to happen.

kinds.py maps event actions to the kinds a webhook subscribes to; store.py owns the
SQL (webhooks, the outbox of deliveries that migration 0024's trigger fills in the
transaction of each event); destination.py refuses unsafe URLs; payload.py and
signing.py make a delivery's body and signature; worker.py sends them.
"""
