// Librarian's document routes (`/orgs/{org}/documents...`), called with the user's token.

export interface DocumentStatus {
  path: string;
  status: string;
  chunkCount?: number;
  reason?: string | null;
  error?: string | null;
  sizeBytes?: number | null;
  updatedAt?: string | null;
  parser?: string | null;
  /** While running: parsing | embedding | indexing (the ingest graph's next step). */
  stage?: string | null;
  /** While embedding: how many chunks the document has; `chunkCount` is how many are written so far. */
  chunkTotal?: number | null;
  /** Queued or running runs of this document. */
  queuedRuns?: number | null;
  /** While queued: when its oldest waiting run was enqueued, so waiting documents can be put in line. */
  queuedSince?: string | null;
}

export interface GraphBuildScheduled {
  organization_id: string;
  coalesced?: boolean;
  [key: string]: unknown;
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    readonly code: string,
    message: string,
  ) {
    super(message);
  }
}

export class Api {
  /**
   * `onUnauthorized` runs when the server answers 401 to a signed-in call (the token expired or was
   * revoked mid-session), so the page can say so instead of failing every call after it.
   */
  constructor(
    readonly token: string,
    readonly org: string,
    readonly onUnauthorized?: () => void,
  ) {}

  headers(): Record<string, string> {
    return { Authorization: `Bearer ${this.token}` };
  }

  /** A call with the user's token; a non-2xx answer becomes an `ApiError` with the server's message. */
  async request(path: string, init: RequestInit = {}): Promise<Response> {
    const response = await fetch(path, { ...init, headers: { ...this.headers(), ...(init.headers ?? {}) } });
    if (!response.ok) {
      let code = "error";
      let message = `${response.status} ${response.statusText}`;
      try {
        const body = await response.json();
        code = body?.error?.code ?? code;
        message = body?.error?.message ?? body?.detail ?? message;
      } catch {
        /* not JSON: keep the status line */
      }
      if (response.status === 401) this.onUnauthorized?.();
      throw new ApiError(response.status, code, message);
    }
    return response;
  }

  private docs(): string {
    return `/orgs/${encodeURIComponent(this.org)}/documents`;
  }

  docUrl(path: string): string {
    return `${this.docs()}/${path.split("/").map(encodeURIComponent).join("/")}`;
  }

  async listDocuments(): Promise<DocumentStatus[]> {
    const response = await this.request(this.docs());
    return (await response.json()).documents as DocumentStatus[];
  }

  async upload(file: File): Promise<{ path: string }> {
    const form = new FormData();
    form.append("file", file, file.name);
    const response = await this.request(this.docs(), { method: "POST", body: form });
    return response.json();
  }

  async remove(path: string): Promise<void> {
    await this.request(this.docUrl(path), { method: "DELETE" });
  }

  /** Admins: cancel the document's queued or running ingest (409 when it has none). */
  async cancelIngest(path: string): Promise<void> {
    await this.request(`${this.docUrl(path)}/cancel`, { method: "POST" });
  }

  /** Admins: schedule a rebuild of the organization's GraphRAG index (coalesced with a queued one). */
  async rebuildGraph(): Promise<GraphBuildScheduled> {
    const response = await this.request(`/orgs/${encodeURIComponent(this.org)}/graph`, { method: "POST" });
    return response.json();
  }

  async pageImage(path: string, page: number, width: number): Promise<Blob> {
    const response = await this.request(`${this.docUrl(path)}/pages/${page}.png?width=${width}`);
    return response.blob();
  }

  async graph(view: "" | "/communities" | "/neighbourhood" = "", entity?: string): Promise<any> {
    const query = entity ? `?entity=${encodeURIComponent(entity)}` : "";
    const response = await this.request(`/orgs/${encodeURIComponent(this.org)}/graph${view}${query}`);
    return response.json();
  }
}
