// Talk to Librarian the way the stock Agent Chat UI does, with the official JS SDK:
// `new Client({ apiUrl, apiKey })` (the SDK sends the key as `X-Api-Key`), a `/info` check with the
// same header, a new thread, a streamed run of the `agent` assistant with a human message made of
// content blocks, then the thread list Agent Chat UI shows (threads searched by graph id). With
// LIBRARIAN_FOREIGN_THREAD set (a colleague's thread id), it also tries to open that thread the way
// the Thread History panel does, and reports whether anything came back.
// Prints one JSON line for tests/e2e/test_js_sdk.py; exits 1 with a message on any failure.
import { Client } from "@langchain/langgraph-sdk";

const apiUrl = process.env.LIBRARIAN_URL;
const apiKey = process.env.LIBRARIAN_TOKEN;
const question = process.env.LIBRARIAN_QUESTION;
const assistantId = "agent";
const foreignThread = process.env.LIBRARIAN_FOREIGN_THREAD;

async function opens(call) {
  try {
    await call();
    return true;
  } catch {
    return false;
  }
}

function textOf(content) {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) return content.map((p) => (p?.type === "text" ? p.text : "")).join("");
  return "";
}

try {
  const info = await fetch(`${apiUrl}/info`, { headers: { "X-Api-Key": apiKey } });
  if (!info.ok) throw new Error(`/info answered ${info.status}`);

  const client = new Client({ apiUrl, apiKey });
  const thread = await client.threads.create();
  const human = { id: crypto.randomUUID(), type: "human", content: [{ type: "text", text: question }] };
  let chunkEvents = 0;
  let final = null;
  for await (const part of client.runs.stream(thread.thread_id, assistantId, {
    input: { messages: [human] },
    streamMode: ["values", "messages-tuple"],
  })) {
    if (part.event === "messages") chunkEvents += 1;
    else if (part.event === "values") final = part.data;
    else if (part.event === "error") throw new Error(`run error: ${JSON.stringify(part.data)}`);
  }
  const history = await client.threads.getHistory(thread.thread_id, { limit: 10 });
  const listed = await client.threads.search({ metadata: { graph_id: assistantId }, limit: 100 });
  const foreign = foreignThread
    ? {
        get: await opens(() => client.threads.get(foreignThread)),
        state: await opens(() => client.threads.getState(foreignThread)),
        history: await opens(() => client.threads.getHistory(foreignThread, { limit: 10 })),
      }
    : null;
  const messages = final?.messages ?? [];
  const last = messages[messages.length - 1];
  console.log(
    JSON.stringify({
      threadId: thread.thread_id,
      chunkEvents,
      lastType: last?.type ?? null,
      answer: textOf(last?.content),
      sources: (final?.sources ?? []).map((s) => ({ filename: s.filename, page: s.page })),
      historyLength: history.length,
      listedThreads: listed.map((t) => t.thread_id),
      foreign,
    }),
  );
} catch (error) {
  console.error(`agent_chat_ui.mjs: ${error?.message ?? error}`);
  process.exit(1);
}
