// A tiny element builder: text is always set as text, never parsed as HTML.

type Child = Node | string | null | undefined | false;

export function h<K extends keyof HTMLElementTagNameMap>(
  tag: K,
  attrs: Record<string, string | boolean | number | EventListener | undefined> = {},
  ...children: Child[]
): HTMLElementTagNameMap[K] {
  const el = document.createElement(tag);
  for (const [key, value] of Object.entries(attrs)) {
    if (value === undefined || value === false) continue;
    if (key.startsWith("on") && typeof value === "function") el.addEventListener(key.slice(2), value);
    else if (key === "class") el.className = String(value);
    else el.setAttribute(key, value === true ? "" : String(value));
  }
  for (const child of children) if (child) el.append(child);
  return el;
}

export function announce(message: string): void {
  const region = document.getElementById("announce");
  if (!region) return;
  region.textContent = "";
  window.setTimeout(() => (region.textContent = message), 50);
}

export function formatBytes(n: number | null | undefined): string {
  if (n == null) return "";
  if (n < 1024) return `${n} B`;
  if (n < 1024 * 1024) return `${(n / 1024).toFixed(1)} KB`;
  return `${(n / 1024 / 1024).toFixed(1)} MB`;
}

/** "1 chunk", "2 chunks": a count with its noun in the right number (`many` for irregular plurals). */
export function plural(n: number, one: string, many: string = `${one}s`): string {
  return `${n} ${n === 1 ? one : many}`;
}

/** "1st", "2nd", "3rd", "11th": a place in line. */
export function ordinal(n: number): string {
  const tens = n % 100;
  const suffix = tens >= 11 && tens <= 13 ? "th" : ({ 1: "st", 2: "nd", 3: "rd" } as Record<number, string>)[n % 10] ?? "th";
  return `${n}${suffix}`;
}

/**
 * A file name that may wrap after `_`, `-`, `.` or `/` (a `<wbr>` there), so a long name breaks at
 * its own separators ("word_sample_" / "report.docx") rather than mid-word.
 */
export function breakableName(name: string): DocumentFragment {
  const fragment = document.createDocumentFragment();
  name.split(/(?<=[_\-./])/).forEach((part, i) => {
    if (i) fragment.append(document.createElement("wbr"));
    fragment.append(part);
  });
  return fragment;
}
