"""Memory Store client for Python (standard library only).

    from memory_store_client import MemoryStore
    store = MemoryStore("http://127.0.0.1:8080", token)
    created = store.create_memory("Deploys go through blue-green.", tags=["deploy"])
    for row in store.iter_memories(q="deploy"):
        print(row["id"], row.get("title"))
"""

from ._client import (
    AuthenticationError,
    ConflictError,
    MemoryStore,
    MemoryStoreError,
    NotFoundError,
    PayloadTooLargeError,
    PermissionDeniedError,
    RateLimitError,
    ServiceUnavailableError,
    ValidationError,
    VersionConflictError,
    VersionRef,
    etag,
    parse_retry_after,
)
from ._types import BulkDeleteResult, CreatedMemory, Memory, MemoryPage, MemoryRow, SimilarMemory, Stats, ValidationDetail

__version__ = "1.0.0"

__all__ = [
    "AuthenticationError",
    "BulkDeleteResult",
    "ConflictError",
    "CreatedMemory",
    "Memory",
    "MemoryPage",
    "MemoryRow",
    "MemoryStore",
    "MemoryStoreError",
    "NotFoundError",
    "PayloadTooLargeError",
    "PermissionDeniedError",
    "RateLimitError",
    "ServiceUnavailableError",
    "SimilarMemory",
    "Stats",
    "ValidationDetail",
    "ValidationError",
    "VersionConflictError",
    "VersionRef",
    "etag",
    "parse_retry_after",
]
