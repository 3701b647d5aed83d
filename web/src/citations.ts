// Answers cite `state.sources[n-1]` with `[n]` (or `[1, 3]`). `state.citations` (when the server
// verified the answer) gives, per answer sentence, the supporting span as offsets into a source's text.

export interface Source {
  id: string;
  path: string;
  filename: string;
  page: number;
  bbox: { left: number; top: number; width: number; height: number } | null;
  text: string;
  blockType?: string;
}

export interface Evidence {
  marker: number;
  source_id: string;
  supported: boolean;
  score: number;
  start: number;
  end: number;
}

export interface Citation {
  start: number;
  end: number;
  markers: number[];
  supported: boolean;
  evidence?: Evidence[];
  span?: { marker: number; start: number; end: number } | null;
}

export type Segment = { text: string } | { markers: number[]; offset: number; raw: string };

const MARKER = /\[(\d+(?:\s*,\s*\d+)*)\]/g;

/** The answer split into plain text and citation markers, with each marker's offset in the answer. */
export function segments(answer: string): Segment[] {
  const out: Segment[] = [];
  let last = 0;
  for (const match of answer.matchAll(MARKER)) {
    const at = match.index ?? 0;
    if (at > last) out.push({ text: answer.slice(last, at) });
    out.push({ markers: match[1].split(",").map((n) => Number(n.trim())), offset: at, raw: match[0] });
    last = at + match[0].length;
  }
  if (last < answer.length) out.push({ text: answer.slice(last) });
  return out;
}

/** The text a marker belongs to: its verified sentence, or else its line of the answer. */
function claimAround(answer: string, offset: number, sentence: Citation | null): string {
  if (sentence) return answer.slice(sentence.start, sentence.end);
  const from = answer.lastIndexOf("\n", offset - 1) + 1;
  const to = answer.indexOf("\n", offset);
  return answer.slice(from, to < 0 ? answer.length : to);
}

/** A quote is its own best support: where the claim (markers, bullet and quote marks removed)
 * appears verbatim in the source, that is the span (extractive answers quote sources verbatim). */
function verbatim(claim: string, text: string): { start: number; end: number } | null {
  const bare = claim
    .replace(MARKER, "")
    .replace(/^[\s\-*•>]+/, "")
    .trim()
    .replace(/^["“'‘]+|["”'’]+$/g, "")
    .trim();
  if (bare.length < 12) return null;
  const at = text.indexOf(bare);
  return at < 0 ? null : { start: at, end: at + bare.length };
}

/** The supporting span of source `n` for the marker at `offset` of the answer, or null (show the
 * whole chunk). A verbatim quote wins; then the server's verified evidence for that marker, from the
 * marker's sentence if it has supported evidence, else the best supported evidence in the answer. */
export function supportingSpan(
  citations: Citation[] | undefined,
  n: number,
  offset: number,
  source: Source,
  answer: string,
): { start: number; end: number } | null {
  const sentence = offset >= 0 ? (citations ?? []).find((c) => c.start <= offset && offset < c.end) ?? null : null;
  if (offset >= 0) {
    const quoted = verbatim(claimAround(answer, offset, sentence), source.text);
    if (quoted) return quoted;
  }
  const valid = (e: Evidence) =>
    e.marker === n && e.supported && e.start >= 0 && e.end > e.start && e.end <= source.text.length;
  const supported = (cs: Citation[]) => cs.flatMap((c) => c.evidence ?? []).filter(valid);
  let pool = sentence ? supported([sentence]) : [];
  if (!pool.length) pool = supported(citations ?? []);
  if (!pool.length) return null;
  const best = pool.reduce((a, b) => (b.score > a.score ? b : a));
  return { start: best.start, end: best.end };
}

/** Text of a message's content, whether a string or a list of content parts. */
export function textOf(content: unknown): string {
  if (typeof content === "string") return content;
  if (Array.isArray(content)) {
    return content.map((p) => (typeof p === "string" ? p : p?.type === "text" ? String(p.text ?? "") : "")).join("");
  }
  return "";
}
