// The signed-in user: a bearer token kept in sessionStorage (gone when the tab closes).
// Claims are read only to label the page and pick the organization; the server verifies the token.

export interface Claims {
  sub: string;
  org: string;
  orgs: string[];
  role: string;
  exp: number;
}

const KEY = "librarian.token";

export function decodeClaims(token: string): Claims | null {
  const parts = token.split(".");
  if (parts.length !== 3) return null;
  try {
    const json = atob(parts[1].replace(/-/g, "+").replace(/_/g, "/").padEnd(Math.ceil(parts[1].length / 4) * 4, "="));
    const claims = JSON.parse(json);
    if (typeof claims.sub !== "string" || typeof claims.org !== "string") return null;
    return {
      sub: claims.sub,
      org: claims.org,
      orgs: Array.isArray(claims.orgs) ? claims.orgs : [claims.org],
      role: typeof claims.role === "string" ? claims.role : "member",
      exp: typeof claims.exp === "number" ? claims.exp : 0,
    };
  } catch {
    return null;
  }
}

export function saveToken(token: string): void {
  sessionStorage.setItem(KEY, token);
}

/** Whether the token's `exp` has passed (a token without `exp` never expires here; the server decides). */
export function isExpired(claims: Claims, now: number = Date.now()): boolean {
  return claims.exp > 0 && claims.exp * 1000 <= now;
}

/** What the tab holds: a usable token, one that expired (dropped, so the page can say so), or none. */
export type StoredSession = { state: "signed-in"; token: string; claims: Claims } | { state: "expired" } | { state: "none" };

export function loadSession(): StoredSession {
  const token = sessionStorage.getItem(KEY);
  if (!token) return { state: "none" };
  const claims = decodeClaims(token);
  if (!claims) {
    sessionStorage.removeItem(KEY);
    return { state: "none" };
  }
  if (isExpired(claims)) {
    sessionStorage.removeItem(KEY);
    return { state: "expired" };
  }
  return { state: "signed-in", token, claims };
}

export function loadToken(): string | null {
  const session = loadSession();
  return session.state === "signed-in" ? session.token : null;
}

export function clearToken(): void {
  sessionStorage.removeItem(KEY);
}
