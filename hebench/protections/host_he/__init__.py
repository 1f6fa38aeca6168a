"""Host-side HE: the client process encrypts and decrypts."""
