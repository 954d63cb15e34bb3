"""The Memory Store client: standard library only (urllib), typed, retries on 429/503."""

from __future__ import annotations

import email.utils
import json
import random
import time
import urllib.error
import urllib.parse
import urllib.request
import uuid
from typing import Any, Callable, Dict, Iterator, List, Mapping, Optional, Sequence, Union

from ._types import BulkDeleteResult, CreatedMemory, Memory, MemoryPage, MemoryRow, Stats, ValidationDetail

VersionRef = Union[int, str, Mapping[str, Any]]
"""A version for If-Match: a version number, an ETag ('"3"'), or a memory (its ``version``)."""


# --- Errors ---------------------------------------------------------------------------------------


class MemoryStoreError(Exception):
    """Any non-2xx answer, with the contract's error envelope (``{"ok": false, "error": "..."}``) read.

    ``status`` is 0 when no answer came (network failure or timeout).
    """

    def __init__(
        self,
        message: str,
        *,
        status: int,
        body: Any = None,
        request_id: Optional[str] = None,
        retry_after: Optional[float] = None,
    ) -> None:
        super().__init__(message)
        self.message = message
        self.status = status
        self.body = body
        self.request_id = request_id
        self.retry_after = retry_after


class AuthenticationError(MemoryStoreError):
    """401: missing, invalid, expired or revoked token."""


class PermissionDeniedError(MemoryStoreError):
    """403: the token lacks the scope, or its IP is not allowed."""


class NotFoundError(MemoryStoreError):
    """404: no such memory (or route)."""


class ConflictError(MemoryStoreError):
    """409: the request conflicts with the stored state."""


class VersionConflictError(MemoryStoreError):
    """412: If-Match named a version that is not the current one (``current_version`` is)."""

    @property
    def current_version(self) -> Optional[int]:
        v = self.body.get("current_version") if isinstance(self.body, dict) else None
        return v if isinstance(v, int) else None


class PayloadTooLargeError(MemoryStoreError):
    """413: the request body is over the service's limit."""


class ValidationError(MemoryStoreError):
    """422: the request was refused; ``detail`` says which field and why."""

    @property
    def detail(self) -> List[ValidationDetail]:
        d = self.body.get("detail") if isinstance(self.body, dict) else None
        return d if isinstance(d, list) else []


class RateLimitError(MemoryStoreError):
    """429: over the token's rate limit (after the retries, if any)."""


class ServiceUnavailableError(MemoryStoreError):
    """503: a backend is unavailable (after the retries, if any)."""


_ERRORS: Dict[int, type] = {
    401: AuthenticationError,
    403: PermissionDeniedError,
    404: NotFoundError,
    409: ConflictError,
    412: VersionConflictError,
    413: PayloadTooLargeError,
    422: ValidationError,
    429: RateLimitError,
    503: ServiceUnavailableError,
}


# --- Helpers --------------------------------------------------------------------------------------


def etag(ref: VersionRef) -> str:
    """The If-Match value for a version: ``"3"`` (an ETag given as a string is passed on unchanged)."""
    if isinstance(ref, bool):
        raise TypeError("a version is an int, an ETag string or a memory")
    if isinstance(ref, int):
        return f'"{ref}"'
    if isinstance(ref, str):
        return ref
    return f'"{int(ref["version"])}"'


def parse_retry_after(value: Optional[str], now: Optional[float] = None) -> Optional[float]:
    """Retry-After in seconds: delta-seconds or an HTTP date (RFC 9110 10.2.3); None if absent or unreadable."""
    if value is None or not value.strip():
        return None
    v = value.strip()
    if v.isdigit():
        return float(v)
    try:
        at = email.utils.parsedate_to_datetime(v)
    except (TypeError, ValueError):
        return None
    return max(0.0, at.timestamp() - (time.time() if now is None else now))


# --- The client -----------------------------------------------------------------------------------


class MemoryStore:
    """A client for one Memory Store service and token.

    ``max_retries`` retries on 429 and 503 (0 turns retrying off), waiting what Retry-After says;
    a Retry-After longer than ``max_retry_delay`` seconds is not waited for (the error is raised at
    once). Without Retry-After it backs off from ``base_retry_delay`` seconds, doubling.
    ``on_retry(error, attempt, delay_seconds)`` is called before each retry.
    """

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        max_retries: int = 3,
        max_retry_delay: float = 30.0,
        base_retry_delay: float = 0.5,
        timeout: float = 30.0,
        on_retry: Optional[Callable[[MemoryStoreError, int, float], None]] = None,
    ) -> None:
        if not base_url:
            raise ValueError("base_url is required")
        if not token:
            raise ValueError("token is required")
        self.base_url = base_url.rstrip("/")
        self._token = token
        self.max_retries = max(0, max_retries)
        self.max_retry_delay = max(0.0, max_retry_delay)
        self.base_retry_delay = max(0.0, base_retry_delay)
        self.timeout = timeout
        self.on_retry = on_retry

    def __repr__(self) -> str:  # never the token
        return f"MemoryStore({self.base_url!r})"

    # --- memories ---

    def create_memory(
        self,
        content: str,
        *,
        title: Optional[str] = None,
        type: Optional[str] = None,
        scope: Optional[str] = None,
        agent: Optional[str] = None,
        project: Optional[str] = None,
        tags: Optional[Sequence[str]] = None,
        supersedes: Optional[Sequence[str]] = None,
        idempotency_key: Optional[str] = None,
    ) -> CreatedMemory:
        """Creates a memory. Sends an Idempotency-Key (yours or a random one): a retried create is stored once.

        Returns ``{"memory": ..., "similar": [...]}`` (near-copies already stored). ``supersedes``
        names older memories this one replaces (they drop out of searches and lists).
        """
        body: Dict[str, Any] = {"content": content}
        for key, value in (("title", title), ("type", type), ("scope", scope), ("agent", agent), ("project", project)):
            if value is not None:
                body[key] = value
        if tags is not None:
            body["tags"] = list(tags)
        if supersedes is not None:
            body["supersedes"] = list(supersedes)
        answer = self._call(
            "POST", "/api/memories", body=body, headers={"Idempotency-Key": idempotency_key or str(uuid.uuid4())}, retry_503=True
        )
        return {"memory": answer["memory"], "similar": answer.get("similar") or []}

    def get_memory(self, memory_id: str) -> Memory:
        """Fetches a memory with its content."""
        return self._call("GET", f"/api/memories/{_quote(memory_id)}")["memory"]  # type: ignore[no-any-return]

    def update_memory(self, memory_id: str, changes: Mapping[str, Any], *, if_match: Optional[VersionRef] = None) -> Memory:
        """Changes some fields (None leaves a field as it is; "" clears title, agent, project; [] clears tags).

        With ``if_match`` the change is made only if that is still the current version, else
        VersionConflictError is raised.
        """
        headers = None if if_match is None else {"If-Match": etag(if_match)}
        return self._call("PATCH", f"/api/memories/{_quote(memory_id)}", body=dict(changes), headers=headers)["memory"]  # type: ignore[no-any-return]

    def delete_memory(self, memory_id: str, *, if_match: Optional[VersionRef] = None) -> None:
        """Deletes a memory; with ``if_match`` only if that is still its current version."""
        headers = None if if_match is None else {"If-Match": etag(if_match)}
        self._call("DELETE", f"/api/memories/{_quote(memory_id)}", headers=headers)

    def update_if_unchanged(self, memory: Mapping[str, Any], changes: Mapping[str, Any]) -> Memory:
        """Updates ``memory`` only if nobody changed it since it was read (If-Match with its version)."""
        return self.update_memory(memory["id"], changes, if_match=memory)

    def delete_if_unchanged(self, memory: Mapping[str, Any]) -> None:
        """Deletes ``memory`` only if nobody changed it since it was read."""
        self.delete_memory(memory["id"], if_match=memory)

    def modify_memory(self, memory_id: str, change: Callable[[Memory], Mapping[str, Any]], *, attempts: int = 3) -> Memory:
        """Read, change, write with If-Match, again on a conflict (at most ``attempts`` times)."""
        for attempt in range(1, max(1, attempts) + 1):
            current = self.get_memory(memory_id)
            try:
                return self.update_if_unchanged(current, change(current))
            except VersionConflictError:
                if attempt >= attempts:
                    raise
        raise AssertionError("unreachable")

    def list_memories(self, **params: Any) -> MemoryPage:
        """One page of the newest-first list (no ``q``) or of a search (``q``).

        Parameters as the API's: q, type, scope, agent, project, tag (a string or a list), days,
        since, limit, page, skip, mode, after, query_date (search only: when the question is asked;
        times in ``q`` such as "last week" are read from it).
        """
        return self._call("GET", "/api/memories", query=params)  # type: ignore[no-any-return]

    def search_memories(self, q: str, **params: Any) -> MemoryPage:
        """One page of a full-text / meaning search, best match first."""
        return self.list_memories(q=q, **params)

    def iter_pages(self, **params: Any) -> Iterator[MemoryPage]:
        """Every page in turn: the list follows ``next_cursor``, a search follows page numbers while ``has_next``."""
        searching = bool(str(params.get("q") or "").strip())
        query = dict(params)
        while True:
            page = self.list_memories(**query)
            yield page
            if not page.get("has_next") or not page.get("rows"):
                return
            if not searching and page.get("next_cursor"):
                query.pop("page", None)
                query.pop("skip", None)
                query["after"] = page["next_cursor"]
            elif searching:
                query.pop("skip", None)
                query["page"] = int(page.get("page") or query.get("page") or 1) + 1
            else:
                return

    def iter_memories(self, **params: Any) -> Iterator[MemoryRow]:
        """Every row of every page (see ``iter_pages``)."""
        for page in self.iter_pages(**params):
            yield from page["rows"]

    def bulk_delete(self, ids: Sequence[str], *, idempotency_key: Optional[str] = None) -> BulkDeleteResult:
        """Deletes up to 1,000 memories; ids that did not exist come back in ``missing``."""
        answer = self._call(
            "POST",
            "/api/memories/bulk-delete",
            body={"ids": list(ids)},
            headers={"Idempotency-Key": idempotency_key or str(uuid.uuid4())},
            retry_503=True,
        )
        return {"deleted": answer["deleted"], "ids": answer["ids"], "missing": answer["missing"]}

    def stats(self) -> Stats:
        """Counts by type, scope, project and agent."""
        return self._call("GET", "/api/stats")["stats"]  # type: ignore[no-any-return]

    # --- transport ---

    def _url(self, path: str, query: Optional[Mapping[str, Any]]) -> str:
        pairs = []
        for key, value in (query or {}).items():
            if value is None:
                continue
            for v in value if isinstance(value, (list, tuple)) else [value]:
                if isinstance(v, bool):
                    v = "true" if v else "false"
                elif hasattr(v, "isoformat"):
                    v = v.isoformat()
                pairs.append((key, str(v)))
        return self.base_url + path + ("?" + urllib.parse.urlencode(pairs) if pairs else "")

    def _call(
        self,
        method: str,
        path: str,
        *,
        query: Optional[Mapping[str, Any]] = None,
        body: Any = None,
        headers: Optional[Mapping[str, str]] = None,
        retry_503: bool = True,
    ) -> Any:
        url = self._url(path, query)
        all_headers = {"Accept": "application/json", "Authorization": f"Bearer {self._token}", **(headers or {})}
        data = None
        if body is not None:
            data = json.dumps(body).encode("utf-8")
            all_headers["Content-Type"] = "application/json"
        attempt = 0
        while True:
            result = self._attempt(method, path, url, all_headers, data)
            if not isinstance(result, MemoryStoreError):
                return result
            retriable = result.status == 429 or (result.status == 503 and retry_503)
            if not retriable or attempt >= self.max_retries:
                raise result
            if result.retry_after is not None:
                delay = result.retry_after
            else:
                delay = self.base_retry_delay * (2**attempt) * (0.5 + random.random() / 2)
            if delay > self.max_retry_delay:
                raise result
            attempt += 1
            if self.on_retry is not None:
                self.on_retry(result, attempt, delay)
            time.sleep(delay)

    def _attempt(self, method: str, path: str, url: str, headers: Mapping[str, str], data: Optional[bytes]) -> Any:
        request = urllib.request.Request(url, data=data, method=method, headers=dict(headers))
        try:
            with _OPENER.open(request, timeout=self.timeout) as response:
                text = response.read().decode("utf-8")
                return json.loads(text) if text else None
        except urllib.error.HTTPError as e:
            raw = e.read().decode("utf-8", errors="replace")
            try:
                parsed = json.loads(raw) if raw else None
            except ValueError:
                parsed = None
            location = e.headers.get("Location") if 300 <= e.code < 400 else None
            if isinstance(parsed, dict) and isinstance(parsed.get("error"), str):
                message = parsed["error"]
            elif location:
                message = f"HTTP {e.code}: redirected to {location} (not followed; use that address as base_url if it is the service)"
            else:
                message = f"HTTP {e.code}"
            cls = _ERRORS.get(e.code, MemoryStoreError)
            return cls(
                message,
                status=e.code,
                body=parsed,
                request_id=e.headers.get("X-Request-Id"),
                retry_after=parse_retry_after(e.headers.get("Retry-After")),
            )
        except (urllib.error.URLError, OSError) as e:
            reason = getattr(e, "reason", e)
            return MemoryStoreError(f"{method} {path}: {reason}", status=0)


class _NoRedirect(urllib.request.HTTPRedirectHandler):
    """Follows no redirect: the API never redirects, and urllib would send the token to the new host."""

    def redirect_request(self, req: urllib.request.Request, fp: Any, code: int, msg: str, headers: Any, newurl: str) -> None:
        return None


_OPENER = urllib.request.build_opener(_NoRedirect)


def _quote(segment: str) -> str:
    return urllib.parse.quote(segment, safe="")
