"""Decryptor-HE: clients encrypt under a public key; one decryptor opens aggregates."""
