"""Retry policy on answers the service cannot be made to give on cue (503, a far Retry-After):
a scripted stdlib HTTP server on 127.0.0.1 in a thread."""

from __future__ import annotations

import json
import threading
import unittest
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any, Dict, List, Optional, Tuple

from memory_store_client import MemoryStore, MemoryStoreError, RateLimitError, ServiceUnavailableError, parse_retry_after

Answer = Tuple[int, Dict[str, str], Any]
MEMORY: Dict[str, Any] = {"id": "6740a1b2c3d4e5f601234567", "content": "x", "version": 1}


class Scripted:
    """Answers requests from a script (the last answer repeats) and records their headers."""

    def __init__(self, answers: List[Answer]) -> None:
        self.answers = answers
        self.seen: List[Dict[str, str]] = []
        scripted = self

        class Handler(BaseHTTPRequestHandler):
            def _answer(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                self.rfile.read(length)
                scripted.seen.append(dict(self.headers.items()))
                status, headers, body = scripted.answers[min(len(scripted.seen), len(scripted.answers)) - 1]
                data = json.dumps(body).encode()
                self.send_response(status)
                for k, v in {"Content-Type": "application/json", "Content-Length": str(len(data)), **headers}.items():
                    self.send_header(k, v)
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST = _answer

            def log_message(self, format: str, *args: Any) -> None:
                pass

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.thread = threading.Thread(target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.server.shutdown()
        self.server.server_close()


class RetryPolicy(unittest.TestCase):
    def scripted(self, answers: List[Answer]) -> Scripted:
        s = Scripted(answers)
        self.addCleanup(s.close)
        return s

    def test_503_on_create_is_retried_with_the_same_idempotency_key(self) -> None:
        s = self.scripted(
            [(503, {"Retry-After": "0"}, {"ok": False, "error": "Document database unavailable: down"}), (201, {}, {"ok": True, "memory": MEMORY, "similar": []})]
        )
        created = MemoryStore(s.url, "t").create_memory("x")
        self.assertEqual(created["memory"]["id"], MEMORY["id"])
        self.assertEqual(len(s.seen), 2)
        key: Optional[str] = s.seen[0].get("Idempotency-Key")
        self.assertTrue(key)
        self.assertEqual(s.seen[1].get("Idempotency-Key"), key)

    def test_far_retry_after_is_not_waited_for_and_retries_are_bounded(self) -> None:
        far = self.scripted([(429, {"Retry-After": "120"}, {"ok": False, "error": "Rate limit exceeded"})])
        with self.assertRaises(RateLimitError) as over:
            MemoryStore(far.url, "t").stats()
        self.assertEqual(over.exception.retry_after, 120)
        self.assertEqual(len(far.seen), 1)

        down = self.scripted([(503, {}, {"ok": False, "error": "Object store unavailable: bucket missing"})])
        with self.assertRaises(ServiceUnavailableError) as unavailable:
            MemoryStore(down.url, "t", max_retries=2, base_retry_delay=0.001).get_memory(MEMORY["id"])
        self.assertEqual(unavailable.exception.message, "Object store unavailable: bucket missing")
        self.assertEqual(len(down.seen), 3)

    def test_a_redirect_is_not_followed_so_the_token_stays_with_the_service(self) -> None:
        elsewhere = self.scripted([(200, {}, {"ok": True, "stats": {"total": 0}})])
        moved = self.scripted([(307, {"Location": elsewhere.url + "/api/stats"}, {})])
        with self.assertRaises(MemoryStoreError) as redirected:
            MemoryStore(moved.url, "mem_tok_secret").stats()
        self.assertEqual(redirected.exception.status, 307)
        self.assertIn(f"redirected to {elsewhere.url}/api/stats", redirected.exception.message)
        self.assertEqual((len(moved.seen), len(elsewhere.seen)), (1, 0))

    def test_retry_after_as_seconds_or_http_date(self) -> None:
        now = 1795773600.0  # 2026-11-27T10:00:00Z
        self.assertEqual(parse_retry_after("7", now), 7)
        self.assertEqual(parse_retry_after("Fri, 27 Nov 2026 10:00:05 GMT", now), 5)
        self.assertIsNone(parse_retry_after("soon", now))
        self.assertIsNone(parse_retry_after(None, now))


if __name__ == "__main__":
    unittest.main()
