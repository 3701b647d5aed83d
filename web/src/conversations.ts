// The conversation sidebar: the user's own chat threads (the server lists only the caller's, see
// auth.py), newest first, to open, rename (thread metadata `title`), delete, or start anew.
import type { Client } from "@langchain/langgraph-sdk/client";
import { announce, h } from "./dom";

export interface Conversation {
  id: string;
  title: string;
}

/** A conversation's name: its `title`, else the time it was started. */
function titleOf(thread: { metadata?: Record<string, unknown> | null; created_at: string }): string {
  const title = thread.metadata?.title;
  return typeof title === "string" && title.trim() ? title : `Conversation of ${new Date(thread.created_at).toLocaleString()}`;
}

/** The default title of a new conversation: its first question, shortened to one line. */
export function defaultTitle(question: string): string {
  const line = question.replace(/\s+/g, " ").trim();
  return line.length > 80 ? `${line.slice(0, 77)}…` : line;
}

export class ConversationList {
  readonly element: HTMLElement;
  private readonly list: HTMLUListElement;
  private items: Conversation[] = [];

  constructor(
    private readonly client: Client,
    private current: string | null,
    private readonly onNew: () => void,
    private readonly onDeleted: (id: string) => void,
  ) {
    this.list = h("ul", { id: "conversation-list", "aria-label": "Your conversations" });
    this.element = h(
      "nav",
      { class: "conversations", "aria-labelledby": "conversations-title" },
      h("h3", { id: "conversations-title" }, "Conversations"),
      h("button", { type: "button", class: "secondary", onclick: () => this.onNew() }, "New conversation"),
      this.list,
    );
  }

  /** Marks the open conversation (null: a new one, not yet on the server). */
  select(id: string | null): void {
    this.current = id;
    this.draw();
  }

  async refresh(): Promise<void> {
    try {
      const threads = await this.client.threads.search({
        metadata: { kind: "chat" },
        limit: 100,
        sortBy: "updated_at",
        sortOrder: "desc",
      });
      this.items = threads.map((t) => ({ id: t.thread_id, title: titleOf(t) }));
      this.draw();
    } catch (e) {
      this.list.replaceChildren(h("li", { class: "error", role: "alert" }, `Conversations could not be listed: ${(e as Error).message}`));
    }
  }

  private draw(): void {
    if (!this.items.length) {
      this.list.replaceChildren(h("li", { class: "empty" }, "No conversations yet."));
      return;
    }
    this.list.replaceChildren(...this.items.map((item) => this.row(item)));
  }

  private row(item: Conversation): HTMLLIElement {
    const open = h("a", { href: `#/chat/${item.id}`, title: item.title }, item.title);
    if (item.id === this.current) open.setAttribute("aria-current", "page");
    const li = h(
      "li",
      { "data-thread": item.id, "aria-current": item.id === this.current ? "true" : undefined },
      open,
      h("button", { type: "button", class: "icon", "aria-label": `Rename ${item.title}`, onclick: () => this.rename(item, li) }, "Rename"),
      h("button", { type: "button", class: "icon", "aria-label": `Delete ${item.title}`, onclick: () => void this.remove(item) }, "Delete"),
    );
    return li;
  }

  private rename(item: Conversation, li: HTMLLIElement): void {
    const input = h("input", { type: "text", value: item.title, "aria-label": "New name of the conversation", maxlength: 200 });
    const save = async (): Promise<void> => {
      const title = input.value.trim();
      if (!title || title === item.title) return this.draw();
      try {
        await this.client.threads.update(item.id, { metadata: { title } });
        item.title = title;
        announce(`Renamed to ${title}`);
      } catch (e) {
        announce(`The conversation could not be renamed: ${(e as Error).message}`);
      }
      this.draw();
    };
    input.addEventListener("keydown", (event) => {
      if (event.key === "Enter") {
        event.preventDefault();
        void save();
      } else if (event.key === "Escape") this.draw();
    });
    input.addEventListener("blur", () => void save(), { once: true });
    li.replaceChildren(input);
    input.focus();
    input.select();
  }

  private async remove(item: Conversation): Promise<void> {
    if (!window.confirm(`Delete the conversation "${item.title}"? This cannot be undone.`)) return;
    try {
      await this.client.threads.delete(item.id);
      this.items = this.items.filter((i) => i.id !== item.id);
      announce(`Deleted ${item.title}`);
      this.draw();
      this.onDeleted(item.id);
    } catch (e) {
      announce(`The conversation could not be deleted: ${(e as Error).message}`);
    }
  }
}
