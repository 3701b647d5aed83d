// Librarian's browser app: sign-in, document library, cited chat, source viewer, GraphRAG view.
import "./style.css";
import { Api } from "./api";
import { clearToken, decodeClaims, isExpired, loadSession, saveToken } from "./session";
import { h } from "./dom";
import { renderLibrary } from "./library";
import { renderChat } from "./chat";
import { renderGraph } from "./graph";
import { setupViewer } from "./viewer";

const main = document.getElementById("main") as HTMLElement;
const EXPIRED = "Your session expired. Sign in again.";
let stopView: (() => void) | null = null;
let expiryTimer: number | undefined;

/** The token ran out (its `exp` passed, or the server answered 401): back to the form, saying why. */
function sessionExpired(): void {
  stopView?.();
  stopView = null;
  window.clearTimeout(expiryTimer);
  clearToken();
  signIn(EXPIRED);
}

function signIn(error?: string): void {
  document.getElementById("nav")!.hidden = true;
  document.getElementById("who")!.hidden = true;
  const input = h("textarea", {
    id: "token",
    name: "token",
    rows: 4,
    required: true,
    autocomplete: "off",
    spellcheck: "false",
    "aria-describedby": "token-help" + (error ? " token-error" : ""),
  });
  const form = h(
    "form",
    { class: "card signin", "aria-labelledby": "signin-title" },
    h("h2", { id: "signin-title" }, "Sign in"),
    h("label", { for: "token" }, "Access token"),
    input,
    h(
      "p",
      { id: "token-help", class: "help" },
      "Paste the bearer token your organization gave you. For a local server, run ",
      h("code", {}, "librarian token --user YOU --org ORG"),
      " and paste its output.",
    ),
    error ? h("p", { id: "token-error", class: "error", role: "alert" }, error) : null,
    h("button", { type: "submit" }, "Sign in"),
  );
  // Enter signs in (a token is one line); Shift+Enter still breaks the line.
  input.addEventListener("keydown", (event) => {
    if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
      event.preventDefault();
      form.requestSubmit();
    }
  });
  form.addEventListener("submit", async (event) => {
    event.preventDefault();
    const token = input.value.trim().replace(/^Bearer\s+/i, "");
    const claims = decodeClaims(token);
    if (!claims) return signIn("That is not a Librarian token (expected a JWT with sub and org).");
    if (isExpired(claims)) return signIn("That token has expired. Ask for a new one.");
    try {
      await new Api(token, claims.org).listDocuments();
    } catch (e) {
      return signIn(`The server refused this token: ${(e as Error).message}`);
    }
    saveToken(token);
    if (!location.hash || location.hash === "#/") location.hash = "#/library";
    route();
  });
  main.replaceChildren(form);
  input.focus();
}

function route(): void {
  stopView?.();
  stopView = null;
  window.clearTimeout(expiryTimer);
  const session = loadSession();
  if (session.state === "expired") return signIn(EXPIRED);
  if (session.state === "none") return signIn();
  const { token, claims } = session;
  const api = new Api(token, claims.org, sessionExpired);
  // Say so when the token runs out while the page is open, not at the next click. (Timers beyond
  // 2^31 ms fire at once, so a far expiry is not scheduled.)
  const left = claims.exp * 1000 - Date.now();
  if (claims.exp && left < 2 ** 31 - 1) expiryTimer = window.setTimeout(sessionExpired, left);
  document.getElementById("nav")!.hidden = false;
  const who = document.getElementById("who")!;
  who.hidden = false;
  document.getElementById("who-text")!.textContent = `${claims.sub} · ${claims.org} (${claims.role})`;
  const [view, ...rest] = (location.hash.replace(/^#\//, "") || "library").split("/");
  for (const link of document.querySelectorAll<HTMLAnchorElement>("#nav a")) {
    if (link.dataset.view === view) link.setAttribute("aria-current", "page");
    else link.removeAttribute("aria-current");
  }
  if (view === "chat") stopView = renderChat(main, api, claims, rest.join("/") || null);
  else if (view === "graph") stopView = renderGraph(main, api);
  else stopView = renderLibrary(main, api, claims);
}

document.getElementById("sign-out")!.addEventListener("click", () => {
  window.clearTimeout(expiryTimer);
  clearToken();
  location.hash = "";
  route();
});
window.addEventListener("hashchange", () => {
  route();
  main.focus();
});
setupViewer();
route();
