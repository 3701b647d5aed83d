"""The audit's HTTP side: one async client to the deployment, requests as a seeded user, as readings.

Every channel is reached the way a client reaches it (Platform API, custom routes, MCP JSON-RPC, A2A
JSON-RPC, the OpenAI chat API), with the member's own token. A request that fails in transport, or a
stream that does not end in time, is still a reading (status 0) so the audit goes on and the probe's
positive control shows whether the channel was really exercised.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import uuid
from typing import Any
from urllib.parse import unquote_plus
from uuid import UUID, uuid5

import httpx

from librarian.evaluation.leaks.readings import Reading
from librarian.evaluation.leaks.tokens import TokenSigner
from librarian.evaluation.leaks.world import Member

#: The `agent` graph's default assistant: the server derives its id from the graph name.
AGENT_ASSISTANT_ID = str(uuid5(UUID("6ba7b821-9dad-11d1-80b4-00c04fd430c8"), "agent"))
OPENAI_MODEL = "librarian"
STREAM_TIMEOUT_S = 60.0  # a stream that is not refused and never ends stops here


def _short(path: str) -> str:
    """The path with UUIDs shortened, so report lines stay readable."""
    parts = [p[:8] + "…" if len(p) == 36 and p.count("-") == 4 else p for p in path.split("/")]
    return "/".join(parts)


class AuditSession:
    """Requests to one deployment as the world's members."""

    def __init__(self, http: httpx.AsyncClient, signer: TokenSigner) -> None:
        self.http = http
        self.signer = signer

    def headers(self, member: Member) -> dict[str, str]:
        return {"Authorization": f"Bearer {self.signer.token(member)}"}

    async def call(
        self,
        member: Member,
        method: str,
        path: str,
        *,
        json_body: Any = None,
        params: dict[str, str] | None = None,
        stream: bool = False,
        headers: dict[str, str] | None = None,
    ) -> Reading:
        """One request as `member`; binary bodies are kept as their digest."""
        request = self.http.build_request(
            method, path, json=json_body, params=params, headers={**self.headers(member), **(headers or {})}
        )
        # decoded: a name the caller put in the query string is theirs, however it was encoded
        sent = unquote_plus(str(request.url)) + (request.content or b"").decode("utf-8", "replace")
        label = f"{method} {_short(path)}"
        try:
            response = await self.http.send(request, stream=stream)
        except httpx.HTTPError as exc:
            return Reading(label, sent, 0, f"transport error: {type(exc).__name__}")
        try:
            body = await self._body(response, stream)
        finally:
            await response.aclose()
        if response.headers.get("content-type", "").startswith("image/"):
            return Reading(label, sent, response.status_code, "", digest=hashlib.sha256(body).hexdigest())
        return Reading(label, sent, response.status_code, body.decode("utf-8", "replace"))

    async def _body(self, response: httpx.Response, stream: bool) -> bytes:
        if not stream:
            return await response.aread()
        chunks: list[bytes] = []
        try:
            async with asyncio.timeout(STREAM_TIMEOUT_S):  # heartbeats would defeat a read timeout
                async for chunk in response.aiter_bytes():
                    chunks.append(chunk)
        except (TimeoutError, httpx.TimeoutException):
            pass  # what arrived until the deadline, or until the stream went quiet, is the reading
        return b"".join(chunks)

    async def agent(self, member: Member, question: str, **extra: Any) -> Reading:
        """A stateless agent run (`POST /runs/wait`): the final state, answer and sources."""
        body = {"assistant_id": "agent", "input": {"messages": [{"role": "user", "content": question}]}}
        return await self.call(member, "POST", "/runs/wait", json_body={**body, **extra})

    async def mcp(self, member: Member, tool: str, arguments: dict[str, Any]) -> Reading:
        body = {
            "jsonrpc": "2.0",
            "id": 1,
            "method": "tools/call",
            "params": {"name": tool, "arguments": arguments},
        }
        accept = {"Accept": "application/json, text/event-stream"}
        return await self.call(member, "POST", "/mcp", json_body=body, headers=accept)

    async def a2a(self, member: Member, text: str, context_id: str | None = None) -> Reading:
        message: dict[str, Any] = {
            "role": "user",
            "parts": [{"kind": "text", "text": text}],
            "messageId": str(uuid.uuid4()),
        }
        if context_id:
            message["contextId"] = context_id
        body = {"jsonrpc": "2.0", "id": 1, "method": "message/send", "params": {"message": message}}
        return await self.call(member, "POST", f"/a2a/{AGENT_ASSISTANT_ID}", json_body=body)

    async def openai(self, member: Member, question: str) -> Reading:
        body = {"model": OPENAI_MODEL, "messages": [{"role": "user", "content": question}]}
        return await self.call(member, "POST", "/v1/chat/completions", json_body=body)


def json_of(reading: Reading) -> Any:
    """The reading's body as JSON, or None."""
    try:
        return json.loads(reading.text)
    except ValueError:
        return None
