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
  constructor(
    readonly token: string,
    readonly org: string,
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
