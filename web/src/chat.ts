// Chat over the LangGraph Platform API: one thread per conversation, answers streamed as message
// chunks, `[n]` markers rendered as buttons that open the cited source.
import { Client } from "@langchain/langgraph-sdk/client";
import type { Api } from "./api";
import type { Claims } from "./session";
import { h } from "./dom";
import { segments, textOf, type Citation, type Source } from "./citations";
import { openSource } from "./viewer";

const ASSISTANT = "agent";

interface Turn {
  question: string;
  answer: string;
  done: boolean;
  error?: string;
}

export function renderChat(root: HTMLElement, api: Api, claims: Claims): () => void {
  const client = new Client({ apiUrl: location.origin, apiKey: null, defaultHeaders: api.headers() });
  let threadId: string | null = null;
  let sources: Source[] = [];
  let citations: Citation[] = [];
  const turns: Turn[] = [];
  let cancelled = false;

  const log = h("ol", { class: "turns", "aria-label": "Conversation" });
  const question = h("textarea", { id: "question", rows: 2, required: true, placeholder: "Ask about your documents" });
  const send = h("button", { type: "submit" }, "Ask");
  const form = h(
    "form",
    { class: "ask" },
    h("label", { for: "question" }, "Question"),
    question,
    h("div", { class: "row" }, send, h("button", { type: "button", class: "secondary", onclick: reset }, "New conversation")),
  );

  root.replaceChildren(
    h(
      "section",
      { "aria-labelledby": "chat-title" },
      h("h2", { id: "chat-title" }, `Ask ${claims.org}'s documents`),
      log,
      form,
    ),
  );

  function reset(): void {
    threadId = null;
    sources = [];
    citations = [];
    turns.length = 0;
    draw();
    question.focus();
  }

  function answerBody(turn: Turn, last: boolean): HTMLElement {
    const body = h("div", { class: "answer", "aria-busy": turn.done ? "false" : "true" });
    if (turn.error) {
      body.append(h("p", { class: "error", role: "alert" }, turn.error));
      return body;
    }
    if (!turn.answer && !turn.done) body.append(h("p", { class: "help" }, "Searching…"));
    for (const line of turn.answer.split("\n")) {
      const p = h("p");
      for (const seg of segments(line)) {
        if ("text" in seg) p.append(seg.text);
        else {
          const offset = turn.answer.indexOf(line) + seg.offset;
          for (const n of seg.markers) {
            const source = sources[n - 1];
            if (!source) {
              p.append(`[${n}]`);
              continue;
            }
            p.append(
              h(
                "button",
                {
                  type: "button",
                  class: "cite",
                  "data-n": n,
                  "aria-label": `Source ${n}: ${source.filename}, page ${source.page}`,
                  onclick: () => openSource(api, source, n, last ? citations : undefined, offset, turn.answer),
                },
                `[${n}]`,
              ),
            );
          }
        }
      }
      body.append(p);
    }
    const cited = [...new Set(segments(turn.answer).flatMap((seg) => ("markers" in seg ? seg.markers : [])))];
    const listsSources = /^\s*Sources:/m.test(turn.answer); // the extractive answer names them itself
    if (turn.done && cited.length && !listsSources) {
      body.append(
        h(
          "ul",
          { class: "cited", "aria-label": "Cited sources" },
          ...cited
            .filter((n) => sources[n - 1])
            .map((n) => {
              const source = sources[n - 1];
              return h(
                "li",
                {},
                h(
                  "button",
                  { type: "button", class: "link", onclick: () => openSource(api, source, n, last ? citations : undefined, -1, turn.answer) },
                  `[${n}] ${source.filename}, page ${source.page}`,
                ),
              );
            }),
        ),
      );
    }
    return body;
  }

  function draw(): void {
    log.replaceChildren(
      ...turns.map((turn, i) =>
        h(
          "li",
          { class: "turn" },
          h("p", { class: "q" }, h("span", { class: "who" }, "You: "), turn.question),
          h("div", { class: "a" }, h("span", { class: "who" }, "Librarian:"), answerBody(turn, i === turns.length - 1)),
        ),
      ),
    );
  }

  async function ask(text: string): Promise<void> {
    const turn: Turn = { question: text, answer: "", done: false };
    turns.push(turn);
    draw();
    send.disabled = true;
    try {
      if (!threadId) threadId = (await client.threads.create()).thread_id;
      const chunks = new Map<string, string>();
      const stream = client.runs.stream(threadId, ASSISTANT, {
        input: { messages: [{ role: "user", content: text }] },
        streamMode: ["messages-tuple", "values"],
      });
      for await (const part of stream) {
        if (cancelled) break;
        if (part.event === "messages") {
          const [message] = part.data as [{ type: string; id?: string; content: unknown }, unknown];
          if (message.type !== "ai" && message.type !== "AIMessageChunk") continue;
          const id = message.id ?? "answer";
          const delta = textOf(message.content);
          chunks.set(id, message.type === "AIMessageChunk" ? (chunks.get(id) ?? "") + delta : delta);
          const latest = [...chunks.values()].filter(Boolean).pop();
          if (latest) turn.answer = latest;
          draw();
        } else if (part.event === "values") {
          const state = part.data as { messages?: { type: string; content: unknown }[]; sources?: Source[]; citations?: Citation[] };
          sources = state.sources ?? sources;
          citations = state.citations ?? [];
          const final = [...(state.messages ?? [])].reverse().find((m) => m.type === "ai" && textOf(m.content));
          if (final && state.messages?.[state.messages.length - 1] === final) turn.answer = textOf(final.content);
        } else if (part.event === "error") {
          const data = part.data as { message?: string; error?: string };
          turn.error = `The answer failed: ${data.message ?? data.error ?? "unknown error"}`;
        }
      }
    } catch (e) {
      turn.error = `The answer failed: ${(e as Error).message}`;
    }
    turn.done = true;
    send.disabled = false;
    draw();
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = question.value.trim();
    if (!text) return;
    question.value = "";
    void ask(text);
  });
  question.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  question.focus();
  return () => {
    cancelled = true;
  };
}
