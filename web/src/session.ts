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

export function loadToken(): string | null {
  const token = sessionStorage.getItem(KEY);
  if (!token) return null;
  const claims = decodeClaims(token);
  if (!claims || (claims.exp && claims.exp * 1000 < Date.now())) {
    sessionStorage.removeItem(KEY);
    return null;
  }
  return token;
}

export function clearToken(): void {
  sessionStorage.removeItem(KEY);
}
