"""The API's answer shapes as TypedDicts (from the OpenAPI document's schemas, by hand).

Every key is optional (``total=False``): a field the service leaves out for a token (e.g. the
content for a write-only token) or adds in a later version does not break a caller.
"""

from __future__ import annotations

from typing import Any, Dict, List, Literal, Optional, TypedDict

MemoryType = Literal["note", "fact", "decision", "task", "preference", "reference", "code", "conversation"]
MemoryScope = Literal["global", "project", "agent", "user"]


class Memory(TypedDict, total=False):
    """MemoryDto: a memory as fetch, create and update answer it."""

    id: str
    title: Optional[str]
    type: MemoryType
    content: str
    tags: List[str]
    scope: MemoryScope
    agent: Optional[str]
    project: Optional[str]
    created_at: str
    updated_at: str
    version: int
    superseded_by: str
    valid_to: str


class MemoryRow(TypedDict, total=False):
    """MemoryRowDto: a list or search row (no content; a snippet, and a score when searching)."""

    id: str
    title: Optional[str]
    type: MemoryType
    tags: List[str]
    scope: MemoryScope
    agent: Optional[str]
    project: Optional[str]
    created_at: str
    updated_at: str
    version: int
    superseded_by: str
    valid_to: str
    snippet: str
    score: float
    matched: List[Literal["keyword", "semantic"]]


class MemoryPage(TypedDict, total=False):
    """MemoryListResponseDto: one page of GET /api/memories."""

    ok: bool
    rows: List[MemoryRow]
    count: int
    total: int
    page: Optional[int]
    page_size: int
    total_pages: int
    has_prev: bool
    has_next: bool
    next_cursor: Optional[str]
    mode: Literal["list", "search"]
    search_mode: Literal["hybrid", "keyword", "semantic"]
    best_below_floor: Optional[float]


class SimilarMemory(TypedDict, total=False):
    """SimilarMemoryDto: a stored near-copy of a memory just created."""

    id: str
    title: Optional[str]
    score: float
    likely_update: bool


class CreatedMemory(TypedDict):
    memory: Memory
    similar: List[SimilarMemory]


class Stats(TypedDict, total=False):
    """StatsDto."""

    total: int
    by_type: Dict[str, int]
    by_scope: Dict[str, int]
    by_project: Dict[str, int]
    by_agent: Dict[str, int]


class BulkDeleteResult(TypedDict):
    deleted: int
    ids: List[str]
    missing: List[str]


class ValidationDetail(TypedDict, total=False):
    """One entry of a 422 answer's ``detail`` (pydantic style)."""

    loc: List[Any]
    msg: str
    type: str
    input: Any
    ctx: Dict[str, Any]
