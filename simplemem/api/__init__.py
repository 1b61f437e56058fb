"""The query service (``simplemem serve``): the memory over HTTP, per-tenant keys and quotas."""
