// Chat over the LangGraph Platform API: one thread per conversation (the user's own, listed in the
// sidebar, named in the URL as #/chat/<thread id>), answers streamed as message chunks and rendered as
// safe Markdown, `[n]` markers as buttons that open the cited source, numbered from [1] in each answer.
import "./chat.css";
import { Client } from "@langchain/langgraph-sdk/client";
import type { Api } from "./api";
import type { Claims } from "./session";
import { announce, h } from "./dom";
import { segments, textOf, type Citation, type Source } from "./citations";
import { renderMarkdown } from "./markdown";
import { ConversationList, defaultTitle } from "./conversations";
import { openSource } from "./viewer";

const ASSISTANT = "agent";

/** The paths `librarian ask --mode` offers, as the mode select shows them. */
export const MODES: [string, string][] = [
  ["auto", "Auto"],
  ["search", "Search"],
  ["local", "Graph local"],
  ["global", "Graph global"],
  ["drift", "DRIFT"],
];
const PATH_LABEL: Record<string, string> = {
  search: "search",
  local: "graph local",
  global: "graph global",
  drift: "graph DRIFT",
  none: "no search",
};
/** The offline answerer's first line; shown as a quiet label instead of a banner. */
const OFFLINE_NOTICE = /^Extractive [^\n]*\(no chat model is configured\)[^\n]*\n+/;

interface Turn {
  question: string;
  answer: string;
  done: boolean;
  error?: string;
  stopped?: boolean;
  mode?: string;
  chosenBy?: string;
  closest?: number[];
}

interface Message {
  type: string;
  id?: string;
  content: unknown;
  tool_calls?: unknown[];
  response_metadata?: Record<string, unknown>;
}

/** Citation numbers as this answer shows them: global `n` → 1, 2, ... in order of first mention. */
export function localNumbers(answer: string): Map<number, number> {
  const order = new Map<number, number>();
  for (const seg of segments(answer)) if ("markers" in seg) for (const n of seg.markers) if (!order.has(n)) order.set(n, order.size + 1);
  return order;
}

/** An answer's text with its markers renumbered for display, and its sources listed (for Copy). */
export function copyText(answer: string, sources: Source[]): string {
  const order = localNumbers(answer);
  const text = answer.replace(/\[(\d+(?:\s*,\s*\d+)*)\]/g, (_, list: string) =>
    `[${list.split(",").map((n) => order.get(Number(n.trim())) ?? n.trim()).join(", ")}]`,
  );
  if (/^\s*Sources:/m.test(text) || !order.size) return text;
  const lines = [...order].filter(([n]) => sources[n - 1]).map(([n, k]) => `[${k}] ${sources[n - 1].filename}, page ${sources[n - 1].page}`);
  return `${text}\n\nSources:\n${lines.join("\n")}`;
}

/** The turns of a saved conversation: each question with the final answer that followed it. */
export function turnsFromMessages(messages: Message[]): Turn[] {
  const turns: Turn[] = [];
  for (const message of messages) {
    if (message.type === "human") turns.push({ question: textOf(message.content), answer: "", done: true });
    else if (message.type === "ai" && !message.tool_calls?.length && turns.length) {
      const text = textOf(message.content);
      if (!text) continue;
      Object.assign(turns[turns.length - 1], { answer: text }, pathOf(message));
    }
  }
  for (const turn of turns) if (!turn.answer) turn.stopped = true;
  return turns;
}

function pathOf(message: Message): Partial<Turn> {
  const meta = message.response_metadata ?? {};
  return {
    mode: typeof meta.retrieval_mode === "string" ? meta.retrieval_mode : undefined,
    chosenBy: typeof meta.chosen_by === "string" ? meta.chosen_by : undefined,
    closest: Array.isArray(meta.closest) ? (meta.closest as number[]) : undefined,
  };
}

export function renderChat(root: HTMLElement, api: Api, claims: Claims, openThread: string | null = null): () => void {
  // A 401 on the chat's own calls (threads, runs, streams) ends the session like any other API call's.
  const watchedFetch = async (input: RequestInfo | URL, init?: RequestInit): Promise<Response> => {
    const response = await fetch(input, init);
    if (response.status === 401) api.onUnauthorized?.();
    return response;
  };
  const client = new Client({
    apiUrl: location.origin,
    apiKey: null,
    defaultHeaders: api.headers(),
    callerOptions: { fetch: watchedFetch },
  });
  // The open conversation outlives a visit to the Library (this tab only; the URL names it too).
  const openKey = `librarian.chat.open:${claims.sub}@${claims.org}`;
  let threadId: string | null = openThread ?? sessionStorage.getItem(openKey);
  if (threadId && !openThread) history.replaceState(null, "", `#/chat/${threadId}`);
  let sources: Source[] = [];
  let citations: Citation[] = [];
  let turns: Turn[] = [];
  let reading: AbortController | null = null;
  let runId: string | null = null;
  let closed = false;

  const sidebar = new ConversationList(client, threadId, reset, (id) => {
    if (id === threadId) reset();
  });
  const log = h("ol", { class: "turns", "aria-label": "Conversation" });
  const status = h("p", { class: "sr-only", role: "status", "aria-live": "polite", id: "chat-status" });
  const question = h("textarea", { id: "question", rows: 2, required: true, placeholder: "Ask about your documents" });
  const send = h("button", { type: "submit" }, "Ask");
  const stopButton = h("button", { type: "button", class: "stop secondary", hidden: true, onclick: () => void stop() }, "Stop");
  const mode = h(
    "select",
    { id: "answer-mode", "aria-describedby": "answer-mode-help" },
    ...MODES.map(([value, label]) => h("option", { value }, label)),
  );
  const form = h(
    "form",
    { class: "ask" },
    h("label", { for: "question" }, "Question"),
    question,
    h(
      "div",
      { class: "row chat-controls" },
      send,
      stopButton,
      h("label", { for: "answer-mode" }, "Answer from"),
      mode,
      h("span", { id: "answer-mode-help", class: "sr-only" }, "Auto lets Librarian choose between search and the knowledge graph."),
    ),
  );
  const heading = `Ask ${claims.org}'s documents`;
  const title = h("h2", { id: "chat-title" }, heading);

  root.replaceChildren(
    h(
      "section",
      { class: "chat", "aria-labelledby": "chat-title" },
      sidebar.element,
      h("div", { class: "chat-main" }, title, log, status, form),
    ),
  );

  function reset(): void {
    reading?.abort(); // the run (if any) finishes on the server and stays in its conversation
    threadId = null;
    sessionStorage.removeItem(openKey);
    sources = [];
    citations = [];
    turns = [];
    title.textContent = heading;
    history.replaceState(null, "", "#/chat");
    sidebar.select(null);
    draw();
    question.focus();
  }

  function setStreaming(on: boolean): void {
    send.disabled = on;
    stopButton.hidden = !on;
    stopButton.disabled = true; // until the server has named the run
  }

  function citeButton(turn: Turn, last: boolean, order: Map<number, number>, n: number, offset: number): Node {
    const source = sources[n - 1];
    const shown = order.get(n) ?? n;
    if (!source) return document.createTextNode(`[${shown}]`);
    return h(
      "button",
      {
        type: "button",
        class: "cite",
        "data-n": n,
        "aria-label": `Source ${shown}: ${source.filename}, page ${source.page}`,
        onclick: () => openSource(api, source, n, last ? citations : undefined, offset, turn.answer, shown),
      },
      `[${shown}]`,
    );
  }

  function answerBody(turn: Turn, last: boolean): HTMLElement {
    const body = h("div", { class: "answer md", "aria-busy": turn.done ? "false" : "true" });
    if (turn.error) {
      body.append(h("p", { class: "error", role: "alert" }, turn.error));
      return body;
    }
    if (!turn.answer && !turn.done) body.append(h("p", { class: "help" }, "Searching…"));
    const notice = turn.answer.match(OFFLINE_NOTICE)?.[0] ?? "";
    let shown = turn.answer.slice(notice.length);
    if (turn.closest?.length) shown = shown.replace(/(\n- [^\n]*)+\s*$/, ""); // the buttons below list them
    const order = localNumbers(shown);
    body.append(renderMarkdown(shown, (n, offset) => citeButton(turn, last, order, n, offset < 0 ? -1 : offset + notice.length)));
    const meta = h("div", { class: "answer-meta" });
    if (notice) meta.append(h("span", { class: "tag", title: notice.trim() }, "Extractive (no chat model)"));
    if (turn.mode) {
      const how = turn.chosenBy === "auto" ? "chosen automatically" : turn.chosenBy === "user" ? "your choice" : turn.chosenBy;
      meta.append(h("span", { class: "tag path", "data-mode": turn.mode }, `Answered by ${PATH_LABEL[turn.mode] ?? turn.mode}${how ? ` (${how})` : ""}`));
    }
    if (turn.stopped) meta.append(h("span", { class: "tag" }, "Stopped"));
    if (meta.childNodes.length) body.append(meta);
    if (turn.closest?.length) {
      body.append(
        h(
          "ul",
          { class: "closest", "aria-label": "Closest sources" },
          ...turn.closest
            .filter((n) => sources[n - 1])
            .map((n) => {
              const source = sources[n - 1];
              return h(
                "li",
                {},
                h("button", { type: "button", class: "link", onclick: () => openSource(api, source, n, undefined, -1, turn.answer) }, `${source.filename}, page ${source.page}`),
              );
            }),
        ),
      );
    }
    const listsSources = /^\s*Sources:/m.test(shown); // the extractive answer names them itself
    if (turn.done && order.size && !listsSources) {
      body.append(
        h(
          "ul",
          { class: "cited", "aria-label": "Cited sources" },
          ...[...order]
            .filter(([n]) => sources[n - 1])
            .map(([n, k]) => {
              const source = sources[n - 1];
              return h(
                "li",
                {},
                h(
                  "button",
                  { type: "button", class: "link", onclick: () => openSource(api, source, n, last ? citations : undefined, -1, turn.answer, k) },
                  `[${k}] ${source.filename}, page ${source.page}`,
                ),
              );
            }),
        ),
      );
    }
    if (turn.done && turn.answer) {
      const actions = h("div", { class: "answer-actions" });
      actions.append(
        h("button", { type: "button", class: "secondary", "aria-label": "Copy the answer with its sources", onclick: () => void copy(turn) }, "Copy"),
      );
      if (last && !send.disabled) {
        actions.append(h("button", { type: "button", class: "secondary", "aria-label": "Regenerate the last answer", onclick: () => void regenerate() }, "Regenerate"));
      }
      body.append(actions);
    }
    return body;
  }

  let frame = 0;
  /** While tokens stream, render at most once per frame: Markdown is re-rendered whole each time. */
  function drawSoon(): void {
    if (!frame) frame = requestAnimationFrame(() => ((frame = 0), draw()));
  }

  function draw(): void {
    if (frame) cancelAnimationFrame(frame);
    frame = 0;
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

  async function copy(turn: Turn): Promise<void> {
    const text = copyText(turn.answer.replace(OFFLINE_NOTICE, ""), sources);
    try {
      await navigator.clipboard.writeText(text);
      announce("Answer copied with its sources");
    } catch (e) {
      announce(`The answer could not be copied: ${(e as Error).message}`);
    }
  }

  /** Loads a saved conversation: its turns, their sources, the last answer's citation records. */
  async function load(id: string): Promise<void> {
    sessionStorage.setItem(openKey, id);
    try {
      const state = await client.threads.getState(id);
      const values = (state.values ?? {}) as { messages?: Message[]; sources?: Source[]; citations?: Citation[] };
      sources = values.sources ?? [];
      citations = values.citations ?? [];
      turns = turnsFromMessages(values.messages ?? []);
      const saved = await client.threads.get(id);
      const name = (saved.metadata as Record<string, unknown> | null)?.title;
      if (typeof name === "string") title.textContent = name;
    } catch (e) {
      sessionStorage.removeItem(openKey);
      turns = [{ question: "", answer: "", done: true, error: `This conversation could not be opened: ${(e as Error).message}` }];
    }
    draw();
  }

  async function ask(text: string): Promise<void> {
    const turn: Turn = { question: text, answer: "", done: false };
    turns.push(turn);
    setStreaming(true);
    draw();
    status.textContent = "Answering…";
    runId = null;
    const controller = new AbortController();
    reading = controller;
    try {
      if (!threadId) {
        threadId = (await client.threads.create({ metadata: { title: defaultTitle(text) } })).thread_id;
        history.replaceState(null, "", `#/chat/${threadId}`); // names the conversation without re-routing
        sessionStorage.setItem(openKey, threadId);
        sidebar.select(threadId);
        void sidebar.refresh();
      }
      const chunks = new Map<string, string>();
      const stream = client.runs.stream(threadId, ASSISTANT, {
        input: { messages: [{ role: "user", content: text }] },
        streamMode: ["messages-tuple", "values"],
        context: { mode: mode.value },
        signal: controller.signal,
        onRunCreated: ({ run_id }) => {
          runId = run_id;
          stopButton.disabled = false;
        },
      });
      for await (const part of stream) {
        if (closed || controller.signal.aborted) break;
        if (part.event === "metadata") {
          runId = (part.data as { run_id?: string }).run_id ?? runId;
          stopButton.disabled = !runId;
        } else if (part.event === "messages") {
          const [message] = part.data as [Message, unknown];
          if (message.type !== "ai" && message.type !== "AIMessageChunk") continue;
          const id = message.id ?? "answer";
          const delta = textOf(message.content);
          chunks.set(id, message.type === "AIMessageChunk" ? (chunks.get(id) ?? "") + delta : delta);
          const latest = [...chunks.values()].filter(Boolean).pop();
          if (latest) turn.answer = latest;
          drawSoon();
        } else if (part.event === "values") {
          const state = part.data as { messages?: Message[]; sources?: Source[]; citations?: Citation[] };
          sources = state.sources ?? sources;
          citations = state.citations ?? [];
          const messages = state.messages ?? [];
          const final = messages[messages.length - 1];
          if (final?.type === "ai" && !final.tool_calls?.length && textOf(final.content)) {
            turn.answer = textOf(final.content);
            Object.assign(turn, pathOf(final));
          }
        } else if (part.event === "error") {
          const data = part.data as { message?: string; error?: string };
          turn.error = `The answer failed: ${data.message ?? data.error ?? "unknown error"}`;
        }
      }
    } catch (e) {
      if (!controller.signal.aborted) turn.error = `The answer failed: ${(e as Error).message}`;
    }
    if (controller.signal.aborted && !turn.error) turn.stopped = true;
    if (reading === controller) reading = null;
    turn.done = true;
    setStreaming(false);
    status.textContent = turn.error ? "The answer failed" : turn.stopped ? "Stopped" : "Answer ready";
    if (!closed) draw();
  }

  /** Cancels the run on the server (not only the reading of its stream), then stops reading. */
  async function stop(): Promise<void> {
    const run = runId;
    stopButton.disabled = true;
    try {
      if (threadId && run) await client.runs.cancel(threadId, run, false, "interrupt");
    } catch (e) {
      announce(`The run could not be cancelled: ${(e as Error).message}`);
    }
    reading?.abort();
  }

  /** Replaces the last answer: the last question and what followed it leave the thread, then the
   * question runs again on the same conversation. */
  async function regenerate(): Promise<void> {
    const last = turns[turns.length - 1];
    if (!threadId || !last) return;
    try {
      const state = await client.threads.getState(threadId);
      const messages = ((state.values ?? {}) as { messages?: Message[] }).messages ?? [];
      const from = messages.map((m) => m.type).lastIndexOf("human");
      if (from >= 0) {
        const removals = messages.slice(from).filter((m) => m.id).map((m) => ({ type: "remove", id: m.id, content: "" }));
        await client.threads.updateState(threadId, { values: { messages: removals } });
      }
    } catch (e) {
      announce(`The last answer could not be replaced: ${(e as Error).message}`);
      return;
    }
    turns.pop();
    await ask(last.question);
  }

  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const text = question.value.trim();
    if (!text || send.disabled) return;
    question.value = "";
    void ask(text);
  });
  question.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey) {
      event.preventDefault();
      form.requestSubmit();
    } else if (event.key === "Escape" && !stopButton.hidden && !stopButton.disabled) {
      void stop();
    }
  });
  void sidebar.refresh();
  if (threadId) void load(threadId);
  else draw();
  question.focus();
  return () => {
    closed = true;
    reading?.abort();
  };
}
