"""The Python client against a REAL running Memory Store (no network beyond its address).

Started by test/clients/clients.spec.ts, which boots the service and passes:
  MEMSTORE_URL            the service, e.g. http://127.0.0.1:40123
  MEMSTORE_TOKEN          a token with memory:read, write and delete, no rate limit
  MEMSTORE_LIMITED_TOKEN  a read token limited to 2 requests per (shortened, 2 s) window
Run alone: MEMSTORE_URL=... MEMSTORE_TOKEN=... MEMSTORE_LIMITED_TOKEN=... python3 -m unittest discover -s clients/python/tests
"""

from __future__ import annotations

import os
import unittest
import uuid
from typing import List, Tuple

from memory_store_client import (
    AuthenticationError,
    MemoryStore,
    MemoryStoreError,
    NotFoundError,
    RateLimitError,
    ValidationError,
    VersionConflictError,
)

URL = os.environ.get("MEMSTORE_URL", "")
TOKEN = os.environ.get("MEMSTORE_TOKEN", "")
LIMITED = os.environ.get("MEMSTORE_LIMITED_TOKEN", "")


def setUpModule() -> None:
    if not (URL and TOKEN and LIMITED):
        raise RuntimeError("MEMSTORE_URL, MEMSTORE_TOKEN and MEMSTORE_LIMITED_TOKEN must be set (see the module docstring)")


class ClientAgainstService(unittest.TestCase):
    def setUp(self) -> None:
        self.store = MemoryStore(URL, TOKEN)
        # A word and a project no other test (nor the TypeScript suite) uses.
        self.word = "py" + uuid.uuid4().hex[:10]
        self.project = "py-" + uuid.uuid4().hex[:8]

    def test_create_fetch_and_search(self) -> None:
        created = self.store.create_memory(
            f"The {self.word} runbook: deploys go blue-green.", title="Runbook", type="decision", tags=["deploy", " deploy "], project=self.project
        )
        memory = created["memory"]
        self.assertRegex(memory["id"], r"^[0-9a-f]{24}$")
        self.assertEqual(memory["version"], 1)
        self.assertEqual(memory["tags"], ["deploy"])
        self.assertEqual(created["similar"], [])

        fetched = self.store.get_memory(memory["id"])
        self.assertEqual(fetched["content"], f"The {self.word} runbook: deploys go blue-green.")
        self.assertEqual(fetched["type"], "decision")

        page = self.store.search_memories(self.word)
        self.assertEqual(page["mode"], "search")
        self.assertEqual([r["id"] for r in page["rows"]], [memory["id"]])
        self.assertIn(self.word, page["rows"][0]["snippet"])

    def test_if_match_conflict_is_a_typed_error(self) -> None:
        memory = self.store.create_memory("first text", project=self.project)["memory"]
        updated = self.store.update_if_unchanged(memory, {"content": "second text"})
        self.assertEqual(updated["version"], 2)

        # A writer that still holds version 1 is refused, and told the current version.
        with self.assertRaises(VersionConflictError) as caught:
            self.store.update_if_unchanged(memory, {"content": "lost update"})
        self.assertEqual(caught.exception.status, 412)
        self.assertEqual(caught.exception.current_version, 2)
        with self.assertRaises(VersionConflictError):
            self.store.delete_memory(memory["id"], if_match=1)
        self.assertEqual(self.store.get_memory(memory["id"])["content"], "second text")

        # Read-modify-write: applied on the current version.
        final = self.store.modify_memory(memory["id"], lambda m: {"content": m.get("content", "") + " + appended"})
        self.assertEqual((final["version"], final["content"]), (3, "second text + appended"))
        self.store.delete_if_unchanged(final)
        with self.assertRaises(NotFoundError) as gone:
            self.store.get_memory(memory["id"])
        self.assertEqual(gone.exception.message, "Memory not found")

    def test_errors_carry_the_envelope(self) -> None:
        with self.assertRaises(ValidationError) as bad:
            self.store.list_memories(limit=500)
        self.assertEqual(bad.exception.status, 422)
        self.assertEqual(bad.exception.detail[0]["loc"], ["query", "limit"])
        self.assertTrue(bad.exception.request_id)

        with self.assertRaises(AuthenticationError) as unauthenticated:
            MemoryStore(URL, "mem_tok_0000000000000000_nope").stats()
        self.assertEqual(unauthenticated.exception.status, 401)
        self.assertNotIn("nope", str(unauthenticated.exception))

    def test_list_pages_follow_the_cursor_and_search_pages_the_page_number(self) -> None:
        ids = [self.store.create_memory(f"{self.word} item {i}", project=self.project)["memory"]["id"] for i in range(5)]

        pages = list(self.store.iter_pages(project=self.project, limit=2))
        self.assertEqual([len(p["rows"]) for p in pages], [2, 2, 1])
        self.assertIsNone(pages[1]["page"])  # the second page came from next_cursor
        listed = [r["id"] for p in pages for r in p["rows"]]
        self.assertEqual(listed, list(reversed(ids)))  # newest first, each once

        found = [r["id"] for r in self.store.iter_memories(q=self.word, limit=2)]
        self.assertEqual(sorted(found), sorted(ids))

    def test_429_is_retried_after_retry_after(self) -> None:
        retries: List[Tuple[int, int, float]] = []
        limited = MemoryStore(URL, LIMITED, on_retry=lambda e, attempt, delay: retries.append((e.status, attempt, delay)))
        for _ in range(6):  # the limit is 2 a window: the third is answered 429, waited for, and retried
            self.assertIsInstance(limited.stats()["total"], int)
            if retries:
                break
        self.assertGreaterEqual(len(retries), 1)
        status, attempt, delay = retries[0]
        self.assertEqual((status, attempt), (429, 1))
        self.assertTrue(0 < delay <= 2, delay)

        # Without retries the 429 surfaces as a typed error with the service's Retry-After.
        impatient = MemoryStore(URL, LIMITED, max_retries=0)
        with self.assertRaises(RateLimitError) as over:
            for _ in range(6):
                impatient.stats()
        self.assertEqual(over.exception.status, 429)
        self.assertIsNotNone(over.exception.retry_after)
        self.assertIsInstance(over.exception, MemoryStoreError)


if __name__ == "__main__":
    unittest.main()
