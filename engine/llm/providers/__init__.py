"""Providers: one wire protocol each. SDKs are imported lazily, inside the provider modules."""
