"""Suite files: the schema, one module per block, validated into frozen objects."""
